import shutil

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from compsense.verifiers.simmap import (
    TokenCache,
    cross_similarity_maps,
    encode_tokens,
    pack,
    pad_to,
    similarity_map,
    storage_dtype,
    token_embeddings,
)

TEXTS = ["A dog bites a man.", "The cat is not on the mat.", "Hi", "The red cup sits left of the blue box."]


def test_token_embeddings_are_normalized_masked_and_packed(tiny_encoder):
    batch = token_embeddings(tiny_encoder, TEXTS)
    lengths = batch.mask.sum(dim=1).tolist()
    assert lengths == [len(t) for t in batch.tokens]
    for row, n in enumerate(lengths):
        assert batch.mask[row, :n].all() and not batch.mask[row, n:].any()  # kept tokens first
        norms = batch.embeddings[row, :n].norm(dim=-1)
        torch.testing.assert_close(norms, torch.ones(n), atol=1e-5, rtol=0)
        assert batch.embeddings[row, n:].abs().sum() == 0
    assert not any(t in toks for toks in batch.tokens for t in ("[CLS]", "[SEP]", "[PAD]"))


def test_special_tokens_are_a_parameter(tiny_encoder):
    without = token_embeddings(tiny_encoder, TEXTS)
    with_special = token_embeddings(tiny_encoder, TEXTS, include_special=True)
    assert (with_special.lengths - without.lengths).tolist() == [2] * len(TEXTS)
    assert with_special.tokens[2][0] == "[CLS]" and with_special.tokens[2][-1] == "[SEP]"
    # The content tokens are the same vectors either way.
    torch.testing.assert_close(
        with_special.embeddings[0, 1:-1][: without.lengths[0]], without.embeddings[0, : without.lengths[0]]
    )


def test_token_embeddings_match_sentence_transformers_encode(tiny_encoder):
    reference = tiny_encoder.encode(TEXTS, output_value="token_embeddings")
    batch = token_embeddings(tiny_encoder, TEXTS, include_special=True)
    for row, ref in enumerate(reference):
        n = int(batch.lengths[row])
        torch.testing.assert_close(batch.embeddings[row, :n], F.normalize(ref.float(), dim=-1), atol=1e-5, rtol=0)


def test_batching_does_not_change_embeddings(tiny_encoder):
    one = token_embeddings(tiny_encoder, TEXTS, batch_size=1)
    all_ = token_embeddings(tiny_encoder, TEXTS, batch_size=8)
    torch.testing.assert_close(one.embeddings, all_.embeddings, atol=1e-5, rtol=0)
    assert one.tokens == all_.tokens


def test_pack_moves_kept_positions_first_and_keeps_gradients():
    values = torch.arange(12, dtype=torch.float32).view(2, 3, 2).requires_grad_(True)
    keep = torch.tensor([[False, True, True], [True, False, False]])
    packed, mask = pack(values, keep)
    assert mask.tolist() == [[True, True], [True, False]]
    assert packed.tolist() == [[[2, 3], [4, 5]], [[6, 7], [0, 0]]]
    packed.sum().backward()
    assert values.grad.tolist() == [[[0, 0], [1, 1], [1, 1]], [[1, 1], [0, 0], [0, 0]]]


def test_similarity_map_is_the_masked_cosine(tiny_encoder):
    q = token_embeddings(tiny_encoder, TEXTS[:2])
    d = token_embeddings(tiny_encoder, TEXTS[2:])
    M, q_mask, d_mask = similarity_map(q, d)
    assert M.shape == (2, q.embeddings.shape[1], d.embeddings.shape[1])
    expected = q.embeddings[1, 3] @ d.embeddings[1, 2]
    torch.testing.assert_close(M[1, 3, 2], expected)
    assert M[0][~(q_mask[0][:, None] & d_mask[0][None, :])].abs().sum() == 0
    assert M.max() <= 1 + 1e-5 and M.min() >= -1 - 1e-5
    with pytest.raises(ValueError, match="row i with row i"):
        similarity_map(q, token_embeddings(tiny_encoder, TEXTS[:3]))


def test_cross_maps_hold_every_query_document_combination(tiny_encoder):
    q = token_embeddings(tiny_encoder, TEXTS[:2])
    d = token_embeddings(tiny_encoder, TEXTS)
    M, q_mask, d_mask = cross_similarity_maps(q, d)
    assert M.shape[0] == 2 * len(TEXTS)
    single, _, _ = similarity_map(q.select([1]), d.select([3]))
    n_q, n_d = single.shape[1:]
    torch.testing.assert_close(M[1 * len(TEXTS) + 3, :n_q, :n_d], single[0])
    assert q_mask[5].tolist() == q.mask[1].tolist() and d_mask[5].tolist() == d.mask[1].tolist()


def test_pad_to_adds_masked_positions(tiny_encoder):
    batch = token_embeddings(tiny_encoder, TEXTS)
    padded = pad_to(batch, 30)
    assert padded.embeddings.shape[1] == 30 and padded.mask.sum() == batch.mask.sum()
    with pytest.raises(ValueError, match="shorter"):
        pad_to(batch, 2)


def test_token_cache_writes_once_and_reads_back(tiny_encoder, tmp_path):
    first = TokenCache(tiny_encoder, TEXTS, tmp_path, show_progress=False)
    assert first.encoded == len(TEXTS) and first.path.exists()
    again = TokenCache(tiny_encoder, TEXTS, tmp_path, show_progress=False)
    assert again.encoded == 0  # read from disk, the encoder was not run
    direct = token_embeddings(tiny_encoder, TEXTS)
    from_cache = again.lookup([TEXTS[3], TEXTS[0]])
    n = int(direct.lengths[3])
    torch.testing.assert_close(from_cache.embeddings[0, :n], direct.embeddings[3, :n])
    assert from_cache.tokens[1] == direct.tokens[0]
    assert from_cache.embeddings.shape[1] == int(max(direct.lengths[3], direct.lengths[0]))


def test_a_truncated_token_cache_is_rebuilt_not_trusted(tiny_encoder, tmp_path, caplog):
    first = TokenCache(tiny_encoder, TEXTS, tmp_path, show_progress=False)
    raw = first.path.read_bytes()
    first.path.write_bytes(raw[: len(raw) // 2])  # a kill or a full disk mid-write
    again = TokenCache(tiny_encoder, TEXTS, tmp_path, show_progress=False)
    assert again.encoded == len(TEXTS) and "unreadable token cache" in caplog.text
    assert TokenCache(tiny_encoder, TEXTS, tmp_path, show_progress=False).encoded == 0  # rebuilt whole
    with pytest.raises(KeyError, match="not in this TokenCache"):
        again.rows(["an unseen sentence"])


def test_token_cache_key_tracks_encoder_texts_and_settings(tmp_path):
    from compsense.core.encoders import build_tiny_bert

    encoder = build_tiny_bert(seed=3)
    base = TokenCache(encoder, TEXTS, tmp_path, show_progress=False)
    assert TokenCache(encoder, TEXTS, tmp_path, include_special=True, show_progress=False).key != base.key
    assert TokenCache(encoder, TEXTS[:3], tmp_path, show_progress=False).key != base.key
    with torch.no_grad():
        next(encoder.parameters()).add_(1e-3)  # a "fine-tuned" encoder must not read the old cache
    changed = TokenCache(encoder, TEXTS, tmp_path, show_progress=False)
    assert changed.key != base.key and changed.encoded == len(TEXTS)
    assert len(list(tmp_path.glob("tokens-*.safetensors"))) == 4


def _row_by_row(cache, rows):
    """What `TokenCache.batch` must equal: each row's slice copied into a zero-padded float32 block."""
    lengths = cache.lengths[rows]
    emb = torch.zeros(len(rows), max(int(lengths.max()), 1), cache.values.shape[1])
    for k, r in enumerate(rows):
        start, n = int(cache.offsets[r]), int(cache.lengths[r])
        emb[k, :n] = cache.values[start : start + n].float()
    return emb, (torch.arange(emb.shape[1])[None, :] < lengths[:, None])


def test_token_cache_batch_is_one_gather_matching_row_copies(tiny_encoder):
    texts = TEXTS + ["", "A much longer sentence about a dog, a man and a red cup on the mat."]
    cache = TokenCache(tiny_encoder, texts, show_progress=False)
    for rows in ([0], [3, 1, 1, 5], [4], list(range(len(texts)))):
        emb, mask = _row_by_row(cache, rows)
        batch = cache.batch(rows)
        torch.testing.assert_close(batch.embeddings, emb, atol=0, rtol=0)
        assert batch.mask.tolist() == mask.tolist() and batch.tokens == [cache.tokens[r] for r in rows]


def test_token_cache_dtype_is_stored_and_part_of_the_key(tiny_encoder, tmp_path):
    full = TokenCache(tiny_encoder, TEXTS, tmp_path, show_progress=False)
    half = TokenCache(tiny_encoder, TEXTS, tmp_path, dtype="float16", show_progress=False)
    assert half.key != full.key and half.encoded == len(TEXTS) and half.values.dtype == torch.float16
    assert half.megabytes == pytest.approx(full.megabytes / 2)
    again = TokenCache(tiny_encoder, TEXTS, tmp_path, dtype=torch.float16, show_progress=False)
    assert again.encoded == 0 and again.values.dtype == torch.float16
    rows = [3, 0, 2]
    assert again.batch(rows).embeddings.dtype == torch.float32
    torch.testing.assert_close(again.batch(rows).embeddings, full.batch(rows).embeddings, atol=1e-3, rtol=0)
    assert storage_dtype("fp16") == torch.float16
    with pytest.raises(ValueError, match="cache dtype"):
        storage_dtype("int8")


def test_encode_tokens_keeps_gradients(tiny_encoder):
    tiny_encoder.zero_grad()
    batch = encode_tokens(tiny_encoder, TEXTS[:2])
    batch.embeddings.sum().backward()
    grads = [p.grad for p in tiny_encoder.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)
    tiny_encoder.zero_grad()
    assert np.isfinite(batch.embeddings.detach().numpy()).all()


def test_cache_key_is_unambiguous_and_a_mismatched_file_is_rebuilt(tmp_path, caplog):
    """Joining texts with a separator let ["a\\x00b"] and ["a", "b"] share a key (and a cache)."""
    from compsense.core.encoders import build_tiny_bert
    from compsense.verifiers.simmap import cache_key

    encoder = build_tiny_bert(seed=3)
    assert cache_key(encoder, ["a\x00b"], False) != cache_key(encoder, ["a", "b"], False)
    assert cache_key(encoder, ["ab", ""], False) != cache_key(encoder, ["a", "b"], False)
    cache = TokenCache(encoder, TEXTS[:3], tmp_path, show_progress=False)
    path = next(tmp_path.glob("tokens-*.safetensors"))
    other = TokenCache(encoder, TEXTS[3:5], tmp_path / "other", show_progress=False)
    shutil.copy(next((tmp_path / "other").glob("tokens-*.safetensors")), path)  # another list's file under this key
    rebuilt = TokenCache(encoder, TEXTS[:3], tmp_path, show_progress=False)  # never served as this list's
    assert rebuilt.encoded == 3 and "does not match its key" in caplog.text
    assert cache.key != other.key
