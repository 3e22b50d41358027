"""kernelkb's agent client: tuning sessions over the knowledge base, a model and the harness.

Usage: kkb tune examples/specs/SPEC.py --target h200 --backend triton --budget 16
"""
