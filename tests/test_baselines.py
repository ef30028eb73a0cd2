"""The probes' floor (issue 36, item 4): the untrained encoder is the one pretraining starts from, the pixel
baseline probes the pixels themselves, both write a run folder ``aot record`` accepts, and a finished baseline is
neither redone nor silently replaced by another config's."""
from __future__ import annotations

import json

import pytest
import torch

from helpers import make_imagefolder, tiny_config


@pytest.fixture()
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data = make_imagefolder(tmp_path / "data")
    cfg = tiny_config(data, tmp_path / "runs", "optim.max_steps=1", "probe.epochs=2", "probe.lr=3e-3",
                      "probe.weight_decay=0.0", "probe.knn_k=5", "probe.knn_t=0.5", "run.seed=3")
    return cfg, tmp_path


def test_initial_encoder_is_the_one_pretraining_starts_from(tiny, monkeypatch):
    """The pretraining worker's model, caught where it hands the model to the loop (before any step), has the
    encoder weights of ``initial_encoder`` bit for bit: same seed, same construction order."""
    import aot_lib.training.pretrain as PT
    from aot_lib.training.baselines import initial_encoder

    cfg, _ = tiny
    caught = {}

    class Caught(Exception):
        pass

    def fake_fit(fabric, run, model, *a, **k):
        caught.update({k: v.detach().clone() for k, v in getattr(model, "module", model).encoder.state_dict().items()})
        raise Caught

    monkeypatch.setattr(PT, "fit", fake_fit)
    with pytest.raises(Caught):
        PT.pretrain(cfg)
    torch.manual_seed(12345)  # whatever the global generator held before, the seed decides
    mine = initial_encoder(cfg).state_dict()
    assert mine.keys() == caught.keys()
    for k in mine:
        assert torch.equal(mine[k], caught[k]), k
    other = initial_encoder({**cfg, "run": {**cfg["run"], "seed": 4}}).state_dict()
    assert any(not torch.equal(other[k], mine[k]) for k in mine)  # the seed does decide


def test_pixel_features_are_the_flattened_normalised_image():
    from aot_lib.data.augment import prepare_images
    from aot_lib.training.baselines import PixelFeatures
    from aot_lib.training.evaluation import extract_features

    images = torch.randint(0, 256, (5, 3, 8, 8), dtype=torch.uint8)
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    f = extract_features(PixelFeatures(), images, 8, mean, std)
    by_hand = (images.float() / 255 - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)
    # prepare_images and this line compute the same affine map in float32, maybe in another order: a few ulps
    torch.testing.assert_close(f, by_hand.flatten(1), rtol=1e-6, atol=1e-5)
    assert f.shape == (5, 3 * 8 * 8)
    torch.testing.assert_close(f, prepare_images(images, 8, mean, std).flatten(1), rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["init", "pixels"])
def test_baseline_probes_like_any_run_and_records(tiny, kind):
    import aot_lib.training.probe as P
    from aot_lib.training.baselines import PixelFeatures, baseline, initial_encoder
    from aot_lib.training.builders import load_train_test, normalization_for
    from aot_lib.training.recording import record_run

    cfg, tmp = tiny
    r = baseline(cfg, kind)
    name = "baseline_init_tiny" if kind == "init" else "baseline_pixels_imagefolder_seed3"
    folder = tmp / "runs" / name
    assert json.loads((folder / "probe.json").read_text()) == json.loads(json.dumps(r, default=str))
    record = json.loads((folder / "run.json").read_text())
    assert record["kind"] == f"baseline-{kind}" and record["status"] == "finished" and record["seed"] == 3
    assert record["linear_top1"] == r["linear_top1"] and record["knn_top1"] == r["knn_top1"]
    # the same probes, computed here from features extracted apart
    train, test = load_train_test(cfg)
    mean, std = normalization_for(cfg)
    enc = initial_encoder(cfg) if kind == "init" else PixelFeatures()
    trf, tef = (P.extract_features(enc, d, 16, mean, std) for d in (train, test))
    want = {**P.select_linear_probe(trf, train.labels, tef, test.labels, 3e-3, 0.0, epochs=2,
                                    batch_size=cfg["probe"]["batch_size"], seed=3),
            **P.knn_probe(trf, train.labels, tef, test.labels, k=5, temperature=0.5)}
    assert {k: r[k] for k in want} == want
    assert r["baseline"] == kind and r["model"] == (cfg["model"]["name"] if kind == "init" else None)
    assert r["pretrain_step"] == (0 if kind == "init" else None) and r["test_images"] == 16
    # recorded like a pretrained run (no checkpoint, so no encoder folder)
    dest = tmp / "results" / name
    if record["commit"].endswith("+dirty") or record["commit"].startswith("unknown"):
        copied = record_run(folder, dest, allow_dirty=True)
    else:
        copied = record_run(folder, dest)
    assert sorted(p.name for p in copied) == ["config.yaml", "probe.json", "run.json"]


def test_a_finished_baseline_is_returned_not_redone_and_another_config_is_refused(tiny, monkeypatch):
    import aot_lib.training.probe as P
    from aot_lib.training.baselines import baseline
    from aot_lib.training.config import ConfigError

    cfg, tmp = tiny
    first = baseline(cfg, "pixels")
    monkeypatch.setattr(P, "extract_features", lambda *a, **k: pytest.fail("probed again"))
    assert baseline(cfg, "pixels") == json.loads(json.dumps(first, default=str))
    changed = {**cfg, "probe": {**cfg["probe"], "knn_k": 7}}
    with pytest.raises(ConfigError) as e:
        baseline(changed, "pixels")
    folder = tmp / "runs" / "baseline_pixels_imagefolder_seed3"
    assert str(e.value) == (f"{folder} holds a finished pixels baseline made with another config (probe.knn_k: 5 -> 7); "
                            "delete that folder to probe it again, or set another run.out_dir")
    with pytest.raises(ValueError, match=r"^unknown baseline 'trained'; choose one of init, pixels$"):
        baseline(cfg, "trained")


def test_cli_baseline_takes_overrides_after_its_options(tiny, capsys):
    """argparse fills the positional overrides list once (after ``kind``); the ones after ``-c`` must still count,
    as the evidence script passes them, and a stray word or option is still refused."""
    from aot_lib.cli import main
    from aot_lib.training.config import dump_config

    cfg, tmp = tiny
    path = tmp / "tiny.yaml"
    path.write_text(dump_config(cfg))
    assert main(["baseline", "pixels", "-c", str(path), "run.seed=5", "run.progress=false"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["baseline"] == "pixels" and "hardware" not in out
    assert json.loads((tmp / "runs" / "baseline_pixels_imagefolder_seed5" / "run.json").read_text())["seed"] == 5
    for argv, bad in ((["baseline", "pixels", "-c", str(path), "stray"], "stray"),
                      (["baseline", "pixels", "-c", str(path), "--nope"], "--nope"), (["models", "run.seed=1"], "run.seed=1")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and capsys.readouterr().err.endswith(f"error: unrecognized arguments: {bad}\n")
