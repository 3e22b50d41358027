"""kernelkb's knowledge base: store (chromadb + BM25 + facts), hybrid search, HTTP API and client.

Usage: from kb_server.store import Store; from kb_server.default_store import search
"""
