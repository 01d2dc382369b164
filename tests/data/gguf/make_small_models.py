#!/usr/bin/env python3
"""Writes the non-weight files of the two small GGUF test models (see README.md).

small-h64:  the tiny model's text decoder (hidden 64, so K-quants fall back) with 4 layers.
small-h256: hidden 256 (K-quants apply), 2 key / 8 value DeltaNet heads (ratio 4), 1 KV head,
            an untied LM head and a one-block vision tower.
Both have a 1024-entry vocabulary cut from the tiny model's tokenizer.json: the first 984 BPE
tokens with the merges that stay inside them, then the 33 Qwen3.5 added tokens (ids 984-1016),
then 7 rows without a token. The weights come from tools/make_random_model.

usage: make_small_models.py OUT_DIR   (writes OUT_DIR/small-h64 and OUT_DIR/small-h256)
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "..", "tiny-qwen35")
VOCAB, BASE, FIRST_ADDED = 1024, 984, 248044


def tokenizer_files(out):
    tok = json.load(open(os.path.join(TINY, "tokenizer.json"), encoding="utf-8"))
    vocab = {s: i for s, i in tok["model"]["vocab"].items() if i < BASE}
    merges = [m for m in tok["model"]["merges"] if m[0] in vocab and m[1] in vocab and m[0] + m[1] in vocab]
    tok["model"]["vocab"] = vocab
    tok["model"]["merges"] = merges
    for a in tok["added_tokens"]:
        a["id"] = a["id"] - FIRST_ADDED + BASE
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, indent=1)
    tc = json.load(open(os.path.join(TINY, "tokenizer_config.json"), encoding="utf-8"))
    tc["added_tokens_decoder"] = {str(int(k) - FIRST_ADDED + BASE): v for k, v in tc["added_tokens_decoder"].items()}
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tc, f, ensure_ascii=False, indent=2)
    shutil.copy(os.path.join(TINY, "chat_template.jinja"), out)
    shutil.copy(os.path.join(TINY, "preprocessor_config.json"), out)
    gen = {"bos_token_id": BASE, "eos_token_id": [BASE + 2, BASE], "pad_token_id": BASE, "do_sample": False}
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)


def config(hidden, inter, heads, kv, hk, hv, tied, vision):
    text = {
        "model_type": "qwen3_5_text", "vocab_size": VOCAB, "hidden_size": hidden, "intermediate_size": inter,
        "num_hidden_layers": 4,
        "layer_types": ["linear_attention"] * 3 + ["full_attention"],
        "full_attention_interval": 4, "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": 64,
        "attn_output_gate": True, "hidden_act": "silu", "attention_bias": False, "rms_norm_eps": 1e-6,
        "max_position_embeddings": 4096, "linear_conv_kernel_dim": 4, "linear_num_key_heads": hk,
        "linear_num_value_heads": hv, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
        "tie_word_embeddings": tied, "bos_token_id": BASE, "eos_token_id": BASE + 2,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                            "mrope_section": [3, 3, 2], "mrope_interleaved": True},
    }
    c = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "text_config": text,
         "tie_word_embeddings": tied, "image_token_id": BASE + 12, "video_token_id": BASE + 13,
         "vision_start_token_id": BASE + 9, "vision_end_token_id": BASE + 10}
    if vision:
        c["vision_config"] = {"depth": 1, "hidden_size": 64, "num_heads": 2, "intermediate_size": 128,
                              "in_channels": 3, "patch_size": 16, "temporal_patch_size": 2, "spatial_merge_size": 2,
                              "num_position_embeddings": 64, "out_hidden_size": hidden,
                              "hidden_act": "gelu_pytorch_tanh", "deepstack_visual_indexes": []}
    return c


def main():
    out = sys.argv[1]
    models = {"small-h64": config(64, 128, 4, 2, 2, 4, True, False),
              "small-h256": config(256, 256, 4, 1, 2, 8, False, True)}
    for name, cfg in models.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        tokenizer_files(d)


if __name__ == "__main__":
    main()
