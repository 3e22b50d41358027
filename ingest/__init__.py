"""kernelkb's ingest: markdown, PDF, HTML and kernel files -> chunks and kernel records -> the store.

Usage: kkb ingest corpus/ --prune
"""
