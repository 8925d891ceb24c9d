"""A stand-in for the reader's own program in the docs' examples."""
import os

print("OMP_NUM_THREADS =", os.environ.get("OMP_NUM_THREADS"))
print("FITRUN_WORKERS =", os.environ.get("FITRUN_WORKERS"))
