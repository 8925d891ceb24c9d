# expect: violation prlimit64
# policy: preset=python;cpu_time=5s
"""Raising the CPU limit back up (resource.setrlimit is prlimit64 with a new
limit; reading limits stays allowed)."""
import resource
print(resource.getrlimit(resource.RLIMIT_CPU))
resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print("done: raised")
