"""The REST API (DRF), split by sub-domain. Routes are in `annotations.api_urls`.

One view class per URL, one method per operation, each with its own nested
input / filter / output serializers; views validate, check permissions
(`annotations.permissions`, decided by `annotations.selectors`), call a
selector or a service and serialize.
"""
