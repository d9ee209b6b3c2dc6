"""The model-architecture catalog: the shape of the models the examples serve (and Llama 3.1 405B,
the usual multi-node model), which the tensor-parallel rules divide by (stacks/rules/groups.py).

Each entry is the model's own config.json (`num_attention_heads`, `num_key_value_heads`,
`num_hidden_layers`) or its model card where that states the same numbers; `source` says which. A
model not listed is not guessed at: `models[].architecture` gives its numbers, or the head checks
are skipped for it. Quantized repackagings share their base model's shape (AWQ changes the weights'
encoding, not the attention layout).
"""

from __future__ import annotations

from dataclasses import dataclass

from .config.models import ModelSection


@dataclass(frozen=True)
class ModelArchitecture:
    attention_heads: int
    kv_heads: int
    layers: int
    source: str
    # config.json `head_dim` (or hidden_size / num_attention_heads where the config leaves it to that
    # default): with kv_heads and layers, the KV cache's bytes per token (stacks/offload.py); None: not known.
    head_dim: int | None = None
    # Multi-head latent attention (DeepSeek-V2/V3/R1 style: config.json has `kv_lora_rank`): SGLang keeps one
    # latent per token that every tensor-parallel rank shares, so its file tier has one writer a stage
    # (stacks/offload.py). No catalog entry is one; `models[].architecture.mla` says so for a model.
    mla: bool = False


_LLAMA_31_8B = ModelArchitecture(
    32,
    8,
    32,
    "meta-llama/Llama-3.1-8B config.json: num_attention_heads 32, num_key_value_heads 8, num_hidden_layers 32, "
    "hidden_size 4096 (head_dim 4096 / 32 = 128)",
    head_dim=128,
)
_QWEN25_7B = ModelArchitecture(
    28,
    4,
    28,
    "Qwen/Qwen2.5-7B config.json: hidden_size 3584, head_dim 128 (q_proj 3584x3584 = 28 heads, k_proj 512x3584 = 4 KV "
    "heads), num_hidden_layers 28",
    head_dim=128,
)
_LLAMA_33_70B = ModelArchitecture(
    64,
    8,
    80,
    "meta-llama/Llama-3.3-70B-Instruct config.json: num_attention_heads 64, num_key_value_heads 8, num_hidden_layers "
    "80, hidden_size 8192 (head_dim 8192 / 64 = 128); the same figures in the Llama 3 herd paper's 70B row",
    head_dim=128,
)

ARCHITECTURES: dict[str, ModelArchitecture] = {
    "meta-llama/Llama-3.1-8B": _LLAMA_31_8B,
    "meta-llama/Llama-3.1-8B-Instruct": _LLAMA_31_8B,
    "meta-llama/Llama-3.1-405B": ModelArchitecture(
        128,
        8,
        126,
        "meta-llama/Llama-3.1-405B config.json: num_attention_heads 128, num_key_value_heads 8, num_hidden_layers 126, "
        "hidden_size 16384 (head_dim 16384 / 128 = 128)",
        head_dim=128,
    ),
    "meta-llama/Llama-3.1-405B-Instruct": ModelArchitecture(
        128, 8, 126, "the base model's config.json (the instruct tune keeps the architecture)", head_dim=128
    ),
    "meta-llama/Llama-3.3-70B-Instruct": _LLAMA_33_70B,
    "Qwen/Qwen3-4B": ModelArchitecture(
        32,
        8,
        36,
        "Qwen/Qwen3-4B config.json as restated by THUDM/slime scripts/models/qwen3-4B.sh: 36 layers, 32 attention "
        "heads, 8 query groups (KV heads)",
    ),
    "Qwen/Qwen3-8B": ModelArchitecture(
        32, 8, 36, "Qwen/Qwen3-8B model card: 36 layers, 32 attention heads for Q and 8 for KV (GQA)"
    ),
    "Qwen/Qwen3-32B": ModelArchitecture(
        64, 8, 64, "Qwen/Qwen3-32B model card: 64 layers, 64 attention heads for Q and 8 for KV (GQA)"
    ),
    "Qwen/Qwen2.5-7B-Instruct": _QWEN25_7B,
    "Qwen/Qwen2.5-7B-Instruct-AWQ": _QWEN25_7B,
}


def architecture(model: ModelSection) -> ModelArchitecture | None:
    """The model's shape: its own `architecture` key, else the catalog's entry for its repository."""
    if model.architecture is not None:
        a = model.architecture
        return ModelArchitecture(
            a.attention_heads, a.kv_heads, a.layers, "models[].architecture", head_dim=a.head_dim, mla=a.mla
        )
    return ARCHITECTURES.get(model.model.removeprefix("hf://"))
