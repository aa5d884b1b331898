"""The LM d-sweep: small GPTs trained at several embedding dimensions d (see rag/lm/README in the docs)."""

import os

# On a shared 2-core machine, OpenMP threads that spin while waiting make a 2-thread step 10x slower
# than a 1-thread one whenever another process holds a core; passive waiting avoids it. Only takes
# effect when rag.lm is imported before torch (the CLI does so).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
