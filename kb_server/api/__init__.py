"""The HTTP API of the knowledge base: routes per area under routes/, dependencies in deps.py."""
