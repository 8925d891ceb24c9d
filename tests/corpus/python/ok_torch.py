# expect: ok
# policy: preset=python;fs=libs;cpu_time=20s;memory=4G
# interpreter-paths: yes
# import: torch
# wall: 60
# stdout: 262144.0
"""A torch CPU matmul under the python preset (skipped where torch is not
installed). oneDNN asks the kernel for AMX tile state with
arch_prctl(ARCH_REQ_XCOMP_PERM) on CPUs that have it: allowed."""
import torch
print(float((torch.ones(64, 64) @ torch.ones(64, 64)).sum()))
