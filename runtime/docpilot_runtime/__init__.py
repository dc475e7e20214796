"""DocPilot runtime: indexing a built site, answering questions about it, and serving both.

Nothing here imports MkDocs; `mkdocs_docpilot` is a thin adapter over this package.
"""

__version__ = "0.1.0"
