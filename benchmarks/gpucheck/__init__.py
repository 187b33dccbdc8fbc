"""The parts of benchmarks/gpu_check.py, one module each (a-f), and what they share (runner, sizes, data)."""
