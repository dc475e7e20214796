"""MkDocs adapter for DocPilot: hands the built pages to `docpilot_runtime`'s indexer."""
