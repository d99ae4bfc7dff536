"""A tiny random-weight llama model as a GGUF file, written at test time (test code, never
shipped, never committed as a binary): what the real llama.cpp server in the provider tests
serves. It knows nothing; with a ``json_schema`` response format the server's grammar makes
even its random tokens schema-valid, which is all a smoke test of the wire needs.

Two layers, 64 wide, four heads, feed-forward 128, F32; an SPM vocabulary of ``<unk>``,
``<s>``, ``</s>``, the 256 byte tokens and a few pieces (every text tokenizes, byte by byte
where no piece fits); a ChatML chat template, so ``/v1/chat/completions`` renders messages.
About half a megabyte, deterministic for a seed, written in well under a second.

The weights are random but for one bias: embedding dimension 0 is the same for every token,
so it survives two weak layers and the final norm as a constant, and each token's output
weight in that dimension is a fixed logit bias. The bytes 0x80–0xFF get a large negative
one: random bytes there are invalid UTF-8, which the grammar lets through inside a string
but llama.cpp's chat-output parser then refuses (HTTP 500 "does not match the expected
peg-native format"; measured: 17 of 40 random decisions). A quote, a closing brace and a
closing bracket get a small positive one, so strings and objects end within a few dozen
tokens instead of a few hundred.
"""

from __future__ import annotations

from pathlib import Path

ARCH = "llama"
N_EMBD = 64
N_HEAD = 4
N_LAYER = 2
N_FF = 128
CONTEXT = 131_072
"""The trained context the file declares: the server may use this much without a warning
(each byte of a prompt may be a token of this vocabulary)."""

BIAS_DIM = 0
BIASES = {'"': 5.0, "}": 3.5, "]": 3.5}
"""Logit biases (nats) of byte tokens, by character; every byte ≥ 0x80 gets NON_ASCII."""
NON_ASCII = -40.0
PIECE = -8.0
"""The pieces are for reading prompts: written, they would make every string long."""

WORDS = (
    # the JSON Schema of a decision, and the grammar's words
    "type",
    "string",
    "object",
    "description",
    "properties",
    "required",
    "pattern",
    "enum",
    "items",
    "array",
    "integer",
    "number",
    "boolean",
    "const",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "additionalProperties",
    "oneOf",
    "anyOf",
    "$defs",
    "$ref",
    "#/$defs/",
    "null",
    "true",
    "false",
    "act",
    "capability",
    "lookup",
    "query",
    "select",
    "plan",
    "steps",
    "note",
    "read",
    "inspect",
    "stage",
    "batch",
    "done",
    "abstain",
    "summary",
    "reason",
    "level",
    "args",
    "alias",
    "limit",
    "offset",
    "pin",
    "pages",
    "block",
    "parameter",
    "assertion",
    "body",
    "node",
    "value",
    # the capsule's prose
    "the",
    "and",
    "of",
    "to",
    "a",
    "is",
    "in",
    "for",
    "with",
    "mm",
    "hole",
    "plate",
)
"""Words the prompts are made of: each one and its prefixes are pieces (SPM builds a piece
by merging two adjacent ones, so every prefix must be a token too), so a prompt takes about
a third of the tokens it would byte by byte. Prompt processing is quadratic in its length:
this is most of the first step's time."""


def _pieces() -> list[str]:
    pieces: dict[str, None] = {"▁": None, "▁▁": None}
    for word in WORDS:
        for spelled in (word, f"▁{word}"):
            for end in range(2, len(spelled) + 1):
                pieces.setdefault(spelled[:end], None)
    return [p for p in pieces if len(p.encode()) > 1 or p == "▁"]


PIECES = tuple(_pieces())

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + (message['content'] or '') + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
"""ChatML, the simplest template llama.cpp's jinja engine renders for every role."""


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """(tokens, scores, types) of the SPM vocabulary."""
    from gguf import TokenType

    tokens = ["<unk>", "<s>", "</s>"]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [TokenType.BYTE] * 256
    tokens += list(PIECES)
    types += [TokenType.NORMAL] * len(PIECES)
    # SPM merges the highest-scoring pair first: the longer piece wins.
    scores = [0.0] * (3 + 256) + [float(len(p)) for p in PIECES]
    return tokens, scores, [int(t) for t in types]


def _bias(token: str) -> float:
    if token in PIECES:
        return PIECE
    if not (token.startswith("<0x") and token.endswith(">")):
        return 0.0
    byte = int(token[3:-1], 16)
    return NON_ASCII if byte >= 0x80 else BIASES.get(chr(byte), 0.0)


def write_tiny_gguf(path: Path, *, seed: int = 1234) -> Path:
    """Write the model to ``path`` (a new file) and return it."""
    import numpy as np
    from gguf import GGUFWriter

    tokens, scores, types = vocabulary()
    rng = np.random.default_rng(seed)

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    ones = np.ones(N_EMBD, dtype=np.float32)
    embedding = weights(len(tokens), N_EMBD)
    embedding[:, BIAS_DIM] = 1.0  # ≈ 8 after the final norm (the others are ≈ 0.16)
    output = weights(len(tokens), N_EMBD)
    output[:, BIAS_DIM] = [_bias(t) / 8.0 for t in tokens]
    writer = GGUFWriter(path, ARCH)
    try:
        writer.add_name("aira-tiny-random")
        writer.add_context_length(CONTEXT)
        writer.add_embedding_length(N_EMBD)
        writer.add_block_count(N_LAYER)
        writer.add_feed_forward_length(N_FF)
        writer.add_head_count(N_HEAD)
        writer.add_head_count_kv(N_HEAD)
        writer.add_rope_dimension_count(N_EMBD // N_HEAD)
        writer.add_layer_norm_rms_eps(1e-5)
        writer.add_file_type(0)  # all F32
        writer.add_tokenizer_model("llama")
        writer.add_token_list(tokens)
        writer.add_token_scores(scores)
        writer.add_token_types(types)
        writer.add_unk_token_id(0)
        writer.add_bos_token_id(1)
        writer.add_eos_token_id(2)
        writer.add_add_bos_token(True)
        writer.add_add_eos_token(False)
        writer.add_chat_template(CHAT_TEMPLATE)
        # numpy shapes are ggml's dimensions reversed: (rows = outputs, columns = inputs)
        writer.add_tensor("token_embd.weight", embedding)
        writer.add_tensor("output_norm.weight", ones)
        writer.add_tensor("output.weight", output)
        for i in range(N_LAYER):
            block = f"blk.{i}"
            writer.add_tensor(f"{block}.attn_norm.weight", ones)
            for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
                writer.add_tensor(f"{block}.{name}.weight", weights(N_EMBD, N_EMBD))
            writer.add_tensor(f"{block}.ffn_norm.weight", ones)
            writer.add_tensor(f"{block}.ffn_gate.weight", weights(N_FF, N_EMBD))
            writer.add_tensor(f"{block}.ffn_up.weight", weights(N_FF, N_EMBD))
            writer.add_tensor(f"{block}.ffn_down.weight", weights(N_EMBD, N_FF))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    return path
