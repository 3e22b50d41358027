"""Winners a user can ship: a candidate as a PyTorch custom op that runs only where it was measured to win.

Usage: kkb export-kernel SESSION_OR_RECORD -o my_op.py [--min-speedup 1.0]
       kkb bench my_op.py --shapes batch_size=64 [--device cuda:0]

`plan` (what a module holds; the measurements are agent_client/measurements.py),
`writer` (the module's text), `runtime` (the dispatch copied into every module), `sources` (sessions and
records), `variants` (a spec at shapes a user names), `reverify` (judge a module at them), `cli` (the verbs).
"""
