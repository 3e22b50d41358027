"""The bundled corpus: documents (docs/), accelerator facts (accelerators/*.yaml) and the kernel library
(kernels/<family>/). A wheel installs this folder as the package `kernelkb_corpus`.

Usage: from kb_server.config import bundled_corpus_dir; bundled_corpus_dir() / "accelerators"
"""

from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent
