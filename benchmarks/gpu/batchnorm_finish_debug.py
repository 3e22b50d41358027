"""Debug: the streamed batch norm with STREAM_FINISH on the GPU, against edited copies of the kernel that switch
off one part each (outputs, launch by launch). Usage: python3 benchmarks/gpu/batchnorm_finish_debug.py"""
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from harness.spec import import_file  # noqa: E402

SRC = (REPO / "corpus/kernels/batchnorm/kernel.py").read_text()
IMMEDIATE = ("""                pend_old = tl.atomic_add(cnt_ptr + c_r, 1, sem="relaxed")
                pend_c = c_r""", """                old_now = tl.atomic_add(cnt_ptr + c_r, 1, sem="relaxed")
                _stream_finish(x_ptr, slot_ptr, fin_ptr, tag, c_r, old_now, n_shares, words_per_share, n_batch,
                               n_channels, hw, count, max_spin, PER_CHANNEL, SHARE, GW)""")
EDITS = {
    "as_is": [],
    "no_fin_read": [("if (pre_c == c_a) & (fin >= 0):", "if (pre_c == c_a) & (fin >= 0) & (pre_c < -5):")],
    "no_finisher": [("    if (old + 2) % shares == 0:", "    if (old + 2) % shares == -7:")],
    "immediate": [IMMEDIATE],
    "immediate_no_fin_read": [IMMEDIATE, ("if (pre_c == c_a) & (fin >= 0):",
                                          "if (pre_c == c_a) & (fin >= 0) & (pre_c < -5):")],
}
tmp = Path(tempfile.mkdtemp())
for name, edits in EDITS.items():
    if len(sys.argv) > 1 and name not in sys.argv[1].split(","):
        continue
    text = SRC
    for old, new in edits:
        assert text.count(old) == 1, (name, old)
        text = text.replace(old, new)
    (tmp / f"bn_{name}.py").write_text(text)
    kernel = import_file(tmp / f"bn_{name}.py", f"bn_debug_{name}")
    kernel.TUNABLES.update({"STREAM_FINISH": True, "WORKSPACE": "fill"})
    for dtype, shape in [(torch.bfloat16, (256, 128, 64, 64))]:
        torch.manual_seed(0)
        x = torch.randn(shape, device="cuda", dtype=dtype) * 2.0 + 1.0
        c = shape[1]
        w, b = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
        ref = torch.nn.functional.batch_norm(x.float(), None, None, w, b, training=True)
        for share_bytes in (12582912, 8388608):
            kernel.TUNABLES["STREAM_BYTES"] = share_bytes
            for launch in range(2):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                try:
                    out = kernel.batch_norm_train(x, w, b, None, None, None, 0.1, 1e-5)
                except Exception as exc:  # noqa: BLE001 - a debug script: name the failure, go on
                    print(json.dumps({"variant": name, "error": str(exc).splitlines()[-1][:200]}), flush=True)
                    break
                torch.cuda.synchronize()
                ms = (time.perf_counter() - t0) * 1e3
                err = (out.float() - ref).abs()
                per_c = err.amax(dim=(0, 2, 3))
                print(json.dumps({"variant": name, "stream_bytes": share_bytes, "launch": launch,
                                  "wall_ms": round(ms, 3), "max_err": err.max().item(),
                                  "n_bad_channels": sum(not v < 0.1 for v in per_c.tolist())}), flush=True)
