import time, sys
sys.path.insert(0, "tests/harness")
from conftest import SPECS, candidate
from test_adversarial import CASES
from harness import EvalConfig, WorkerPool
config = EvalConfig.for_cpu_tests(static_checks=False, timeout_s=90.0, cpu_memory_limit_bytes=5 * 1024**3)
T=time.time()
with WorkerPool(["cpu"], config=config) as pool:
    for name, spec, _, _ in CASES:
        t=time.time(); v = pool.evaluate(spec, candidate(name)); print(f"{name:24s} {v.status.value:16s} {time.time()-t:6.2f}", v.diagnostics.get("phase_seconds"))
print("total", time.time()-T)
