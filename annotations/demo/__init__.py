"""Demo data written by the project itself (no third-party corpus copied).

`demo_datasets()` returns the four demo datasets as JSONL bytes in the import
format of ARCHITECTURE.md; `load_demo` imports them through `dataset_import`.
"""

from annotations.demo.datasets import DemoDataset, demo_datasets

__all__ = ["DemoDataset", "demo_datasets"]
