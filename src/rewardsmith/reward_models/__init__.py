"""Model rewards: scalar reward models, process reward models, semantic similarity, likelihood.

Reward types: `reward_model`, `process`, `similarity`, `likelihood`. The first three run their
models once per node in a model host (``backend: transformers``, see `_host`) or on a server
(vLLM, SGLang, OpenRLHF); `likelihood` reads log-probabilities through the judges' backends.
Install with ``pip install "rewardsmith[models]"``.
"""

from ._ahead import ModelError
from ._host import stop_hosts
from ._likelihood import likelihood
from ._process import process
from ._scalar import reward_model
from ._similarity import similarity

__all__ = ["ModelError", "likelihood", "process", "reward_model", "similarity", "stop_hosts"]
