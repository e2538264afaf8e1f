"""`croissant.json`: Croissant 1.1 metadata (MLCommons) with its Responsible-AI (RAI) extension,
describing the export's files and fields, for NeurIPS Datasets & Benchmarks and the Hugging Face Hub.

Written by hand from the standard's vocabulary (the app does not depend on `mlcroissant`); the
tests validate it and load its records with `mlcroissant`, the reference implementation. The
@context is the one mlcroissant 1.1.1 writes for Croissant 1.1 (`rdf.make_context`), plus `rai`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

CONFORMS_TO = ["http://mlcommons.org/croissant/1.1", "http://mlcommons.org/croissant/RAI/1.0"]
CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}
FORMATS = {"jsonl": "application/jsonlines", "csv": "text/csv"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _field(record: str, file_id: str, name: str, data_type: str, ext: str, description: str) -> dict:
    # mlcroissant reads JSON Lines as a table of the top-level keys: a column, as for CSV.
    extract = {"column": name}
    return {
        "@type": "cr:Field",
        "@id": f"{record}/{name}",
        "name": name,
        "description": description,
        "dataType": data_type,
        "source": {"fileObject": {"@id": file_id}, "extract": extract},
    }


MEDIA_KEYS = {
    "type": "the medium: audio, image or video",
    "path": "the file's path under the media root (the files themselves are not in the export)",
    "alt": "the file's text alternative (what a screen reader says; empty when none was given)",
}


def _media_fields(file_id: str, ext: str, roles: tuple[str, ...]) -> list[dict]:
    """The dataset table's `media` (issue 41): role -> {type, path, alt}, as import_dataset reads it.
    JSON Lines: one sub-field per role present, each with type, path and alt picked by JSONPath, so
    mlcroissant yields them as values; CSV keeps the same object as one JSON text cell."""
    if not roles:
        return []
    description = "the item's media files by role (" + ", ".join(roles) + "): type, path, alt"
    if ext == "csv":
        field = _field("dataset", file_id, "media", "sc:Text", ext, description + ", as one JSON object")
        return [field]
    return [
        {
            "@type": "cr:Field",
            "@id": "dataset/media",
            "name": "media",
            "description": description,
            "subField": [
                {
                    "@type": "cr:Field",
                    "@id": f"dataset/media/{role}",
                    "name": role,
                    "description": f"the {role}'s medium (none: every value null)",
                    "subField": [
                        {
                            "@type": "cr:Field",
                            "@id": f"dataset/media/{role}/{key}",
                            "name": key,
                            "description": text,
                            "dataType": "sc:Text",
                            "source": {
                                "fileObject": {"@id": file_id},
                                "extract": {"column": "media"},
                                "transform": {"jsonPath": f"{role}.{key}"},
                            },
                        }
                        for key, text in MEDIA_KEYS.items()
                    ],
                }
                for role in roles
            ],
        }
    ]


def croissant(
    *,
    campaign,
    out: Path,
    ext: str,
    configuration: dict,
    result,
    runs: list,
    licence: str,
    heds: list,
    collected: tuple[str | None, str | None],
    real_annotator_ids: bool,
    documents: bool = False,
    media_roles: tuple[str, ...] = (),
) -> dict:
    """The Croissant document of the export folder `out` (its tables already written)."""
    fmt = FORMATS[ext]
    scored = bool(configuration.get("scale")) and campaign.protocol not in ("pairwise", "bws")
    files = [f"{name}.{ext}" for name in ("dataset", "judgements", "outputs")]
    distribution = [
        {
            "@type": "cr:FileObject",
            "@id": name,
            "name": name,
            "contentUrl": name,
            "encodingFormat": fmt,
            "sha256": _sha256(out / name),
        }
        for name in files
    ]
    judgement_fields = [
        _field("judgements", f"judgements.{ext}", "item", "sc:Text", ext, "the item (input) judged"),
        _field("judgements", f"judgements.{ext}", "annotator", "sc:Text", ext, "the annotator (a pseudonym)"),
        _field("judgements", f"judgements.{ext}", "criterion", "sc:Text", ext, "the quality criterion"),
    ]
    if campaign.protocol not in ("pairwise", "bws"):
        judgement_fields.append(
            _field("judgements", f"judgements.{ext}", "system", "sc:Text", ext, "the system whose output was judged")
        )
    if scored:
        judgement_fields.append(
            _field("judgements", f"judgements.{ext}", "score", "sc:Float", ext, "the annotator's score")
        )

    # Items that are segments of documents (issue 41): the dataset table has doc and doc_pos.
    def document_fields(record: str) -> list[dict]:
        return (
            [
                _field(record, f"{record}.{ext}", "doc", "sc:Text", ext, "the document the item is a segment of"),
                _field(record, f"{record}.{ext}", "doc_pos", "sc:Integer", ext, "the item's place in its document"),
            ]
            if documents
            else []
        )

    record_sets = [
        {
            "@type": "cr:RecordSet",
            "@id": "dataset",
            "name": "dataset",
            "description": "one item (input) a row",
            "field": [
                _field("dataset", f"dataset.{ext}", "item", "sc:Text", ext, "the item's id"),
                _field("dataset", f"dataset.{ext}", "source", "sc:Text", ext, "the input shown to the systems"),
                *document_fields("dataset"),
                *_media_fields(f"dataset.{ext}", ext, media_roles),
            ],
        },
        {
            "@type": "cr:RecordSet",
            "@id": "judgements",
            "name": "judgements",
            "description": "one human judgement a row",
            "field": judgement_fields,
        },
        {
            "@type": "cr:RecordSet",
            "@id": "outputs",
            "name": "outputs",
            "description": "one system output a row, with its aggregated human scores and metric scores",
            "field": [
                _field("outputs", f"outputs.{ext}", "item", "sc:Text", ext, "the item's id"),
                *document_fields("outputs"),
                _field("outputs", f"outputs.{ext}", "system", "sc:Text", ext, "the system's name"),
                _field("outputs", f"outputs.{ext}", "text", "sc:Text", ext, "the output"),
            ],
        },
    ]
    answers = {a.number: a for a in heds if a.criterion is None}
    platforms = (configuration.get("recruitment") or {}).get("join_link_platforms") or {}
    agreement = "; ".join(
        f"{c}: {h.get('label')} = {h.get('value')!r}" for c, h in (configuration.get("agreement") or {}).items()
    )
    intra = configuration.get("intra_annotator_agreement") or {}
    start, end = collected
    licence_url = licence.strip() or "https://spdx.org/licenses/"  # the researchers' to set (--licence)
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": campaign.name,
        "description": f"Human evaluation judgements of campaign {campaign.name} (dataset {campaign.dataset.name}), "
        "exported from the NLG evaluation workbench; README.md is the HEDS 3.0 datasheet, heds.json the same "
        "answers for the official HEDS form.",
        "license": licence_url,
        "url": "README.md",
        "datePublished": (end or "")[:10] or None,
        "version": "1.0.0",
        "distribution": distribution,
        "recordSet": record_sets,
        "rai:dataCollection": answers["3.3.2"].shown() if "3.3.2" in answers else None,
        "rai:dataCollectionType": "Crowdsourced" if platforms else "Manual Human Curator",
        "rai:dataCollectionTimeframe": [t for t in (start, end) if t],
        "rai:dataAnnotationProtocol": (configuration.get("instructions") or "")
        + f" (protocol {campaign.protocol}; criteria: "
        + "; ".join(
            f"{cfg['name']}" + (f": {cfg['question']}" if cfg.get("question") else "")
            for cfg in configuration["criteria_config"]
        )
        + ")",
        "rai:dataAnnotationPlatform": (
            "NLG evaluation workbench" + (" via join links from " + ", ".join(sorted(platforms)) if platforms else "")
        ),
        "rai:dataAnnotationAnalysis": "inter-annotator agreement: "
        + (agreement or "none computed")
        + (
            f"; intra-annotator agreement (self-consistency on repeats): {intra['value']!r}"
            if intra.get("value") is not None
            else ""
        ),
        "rai:annotationsPerItem": f"{configuration['redundancy']} annotator(s) per unit planned; "
        f"{result.judgements} judgements of {result.outputs} outputs exported",
        "rai:annotatorDemographics": answers["3.2.5"].shown()
        if "3.2.5" in answers and answers["3.2.5"].known
        else "not collected (the campaign asked no background questions)",
        "rai:machineAnnotationTools": [
            f"{run.metric}" + (f" ({run.signature})" if run.signature else "") for run in runs
        ],
        "rai:personalSensitiveInformation": "annotators are "
        + (
            "named by workbench and crowd-platform ids (--real-annotator-ids)"
            if real_annotator_ids
            else "pseudonymised per export (HMAC under a key not kept); no names, usernames or emails; "
            "judgement days, not moments"
        ),
        "rai:dataLimitations": "judgements of the workbench's counted (complete) work only, after the filters "
        "listed in README.md; scores are on the campaign's scale and not comparable across campaigns",
        "rai:dataReleaseMaintenancePlan": "a snapshot: re-export from the workbench for newer judgements "
        "(campaign.json re-creates the campaign)",
    }
