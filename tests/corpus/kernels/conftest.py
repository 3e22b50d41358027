"""The library tests run kernels in the Triton interpreter: set it before any test module imports triton
(triton reads TRITON_INTERPRET at import; a module importing triton before library_check would otherwise
leave triton's own @jit helpers, e.g. tl.cdiv, uncallable from interpreted kernels)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
