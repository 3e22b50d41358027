"""kernelkb's benchmark runners (scripts run from the repository root; a package so that tests and scripts
import them as benchmarks.<name>)."""
