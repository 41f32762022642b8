"""Model rewards: scalar reward models, process reward models, semantic similarity.

Reward types: `reward_model`, `process`, `similarity`. Their models run once per node in a
model host (``backend: transformers``, see `_host`) or on a server (vLLM, SGLang, OpenRLHF).
Install with ``pip install "rewardsmith[models]"``.
"""

from ._ahead import ModelError
from ._host import stop_hosts
from ._process import process
from ._scalar import reward_model
from ._similarity import similarity

__all__ = ["ModelError", "process", "reward_model", "similarity", "stop_hosts"]
