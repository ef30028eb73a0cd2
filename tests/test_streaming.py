"""Streaming data (aot_lib.data.convert, decode, streaming, stream_batches): conversion round trip, refusals, per-rank sharding, mid-epoch resume.

Everything runs on a folder of 200 small generated images (JPEG, a few PNG and grayscale ones, 20-60 px,
four classes of unequal size) made under a temporary directory; no data set is needed.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import require

require("litdata", "litdata")
from PIL import Image  # noqa: E402

from aot_lib.data.datasets import DataError  # noqa: E402
from aot_lib.cli import main  # noqa: E402
from aot_lib.data.convert import _check_image, convert_imagefolder, read_meta, stream_provenance  # noqa: E402
from aot_lib.data.decode import crop_position, decode_rgb, fit_square, working_size_for  # noqa: E402
from aot_lib.data.stream_batches import StreamBatches  # noqa: E402
from aot_lib.data.streaming import make_stream_loader  # noqa: E402

N = 200
CLASSES_CREATED = ["zebra", "apple", "Mango", "kiwi"]  # created in this order; labels follow sorted() order
SIZE = 24  # working-image side used by the loader tests (small: the tests check order, not pixels)


def _image(rng, i: int) -> tuple[bytes, str]:
    w, h = (int(x) for x in rng.integers(20, 61, 2))
    arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    img = Image.fromarray(arr)
    out = io.BytesIO()
    if i % 25 == 0:
        img.convert("P").save(out, "PNG")
        return out.getvalue(), "png"
    if i % 10 == 3:
        img.convert("L").save(out, "JPEG", quality=85)
    else:
        img.save(out, "JPEG", quality=85)
    return out.getvalue(), "jpg"


def _make_tree(root: Path, n: int = N, split: str = "train", seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    for i in range(n):
        cls = CLASSES_CREATED[[0, 0, 1, 1, 2, 2, 3][i % 7]]  # unequal class sizes
        data, ext = _image(rng, i)
        d = root / split / cls
        d.mkdir(parents=True, exist_ok=True)
        (d / f"img_{i:04d}.{ext}").write_bytes(data)
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return _make_tree(tmp_path_factory.mktemp("src") / "imagenet_like")


@pytest.fixture(scope="module")
def converted(tree, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("conv")
    # 16 kB chunks: about 20 chunks, so ranks and workers get several each (the default is 64 MB)
    meta = convert_imagefolder(tree, root, split="train", num_workers=2, chunk_bytes="16kb", progress=False)
    assert meta["path"] == str((root / "train").resolve())  # DEST/<split>, like the source tree
    return root / "train"


def _raw_samples(path: Path) -> list[dict]:
    from litdata import StreamingDataset

    ds = StreamingDataset(str(path))
    return [ds[i] for i in range(len(ds))]


def _expected(tree: Path, split: str = "train") -> tuple[list[str], list[tuple[str, int]]]:
    classes = sorted(d.name for d in (tree / split).iterdir() if d.is_dir())
    files = [(f.relative_to(tree).as_posix(), label) for label, c in enumerate(classes)
             for f in sorted((tree / split / c).iterdir())]
    return classes, files


# ----------------------------------------------------------------------------- conversion

def test_conversion_round_trip(tree, converted):
    classes, files = _expected(tree)
    meta = read_meta(converted)
    assert meta["classes"] == classes == sorted(CLASSES_CREATED)  # sorted names, as ImageFolder
    assert meta["n_images"] == N and sum(meta["class_counts"]) == N and meta["reencoded"] == 0
    listed = (converted / "files.txt").read_text().splitlines()
    assert listed == [f for f, _ in files]
    samples = _raw_samples(converted)
    assert sorted(s["id"] for s in samples) == list(range(N))  # every image once
    for s in samples:
        path, label = files[s["id"]]
        assert s["label"] == label
        assert s["image"] == (tree / path).read_bytes()  # the original bytes, JPEG and PNG alike
    prov = stream_provenance(converted.parent)
    assert (prov.dataset, prov.reader, prov.n_images, prov.key) == ("stream", "litdata", N, "imagenet_like_stream")
    ids_in_order = [s["id"] for s in samples]
    assert ids_in_order != sorted(ids_in_order)  # written in a fixed shuffled order (mixed classes per chunk)


def test_zip_conversion_matches_folder_and_does_not_depend_on_workers(tree, converted, tmp_path):
    zpath = tmp_path / "imagenet_like.zip"
    with zipfile.ZipFile(zpath, "w") as zf:  # members <top>/<split>/<class>/<image>, like the offline copies
        for f in sorted((tree / "train").rglob("*")):
            if f.is_file():
                zf.write(f, f"imagenet_like/{f.relative_to(tree).as_posix()}")
        zf.writestr("__MACOSX/imagenet_like/train/apple/._img_0002.jpg", b"resource fork")  # skipped, as on macOS
    dest = tmp_path / "from_zip" / "train"
    meta = convert_imagefolder(zpath, dest.parent, num_workers=0, chunk_bytes="16kb", progress=False)
    assert meta["classes"] == read_meta(converted)["classes"] and meta["split_dir"] == "imagenet_like/train"
    chunks = sorted(p.name for p in converted.glob("chunk-*.bin"))
    assert chunks == sorted(p.name for p in dest.glob("chunk-*.bin")) and len(chunks) > 4
    for name in chunks:  # same samples in the same chunks: the layout is a function of the source alone
        assert (dest / name).read_bytes() == (converted / name).read_bytes()


def test_reencoding_max_side_and_16_bit_png(tmp_path):
    root = tmp_path / "src"
    (root / "train" / "a").mkdir(parents=True)
    rng = np.random.default_rng(1)
    small = Image.fromarray(rng.integers(0, 256, (20, 30, 3), dtype=np.uint8))
    big = Image.fromarray(rng.integers(0, 256, (50, 80, 3), dtype=np.uint8))
    small.save(root / "train" / "a" / "0_small.jpg")
    big.save(root / "train" / "a" / "1_big.jpg")
    Image.fromarray(rng.integers(0, 65535, (20, 20), dtype=np.uint16)).save(root / "train" / "a" / "2_deep.png")
    meta = convert_imagefolder(root, tmp_path / "out", num_workers=0, max_side=40, progress=False)
    assert meta["reencoded"] == 2  # the big JPEG (max_side) and the 16-bit PNG (not 8-bit RGB for the decoder)
    by_id = {s["id"]: s["image"] for s in _raw_samples(tmp_path / "out" / "train")}
    assert by_id[0] == (root / "train" / "a" / "0_small.jpg").read_bytes()
    assert tuple(decode_rgb(by_id[1]).shape) == (3, 25, 40)  # longer side 80 -> 40, aspect kept
    assert decode_rgb(by_id[2]).dtype == torch.uint8


def _error(fn) -> str:
    with pytest.raises(DataError) as e:
        fn()
    return str(e.value)


def test_refuses_missing_empty_and_corrupt_sources(tmp_path):
    out = tmp_path / "out"
    msg = _error(lambda: convert_imagefolder(tmp_path / "nowhere", out, progress=False))
    assert "does not exist" in msg and "<class>/<image>" in msg
    (tmp_path / "empty" / "train" / "cls").mkdir(parents=True)
    msg = _error(lambda: convert_imagefolder(tmp_path / "empty", out, progress=False))
    assert "holds no images" in msg
    msg = _error(lambda: convert_imagefolder(tmp_path / "empty", out, split="val", progress=False))
    assert "no val/ folder" in msg and "--split" in msg

    bad = _make_tree(tmp_path / "bad", n=12)
    good = next((bad / "train" / "apple").glob("*.jpg")).read_bytes()
    (bad / "train" / "apple" / "garbage.jpg").write_bytes(b"this is not an image" * 20)
    (bad / "train" / "kiwi" / "truncated.jpg").write_bytes(good[: len(good) // 2])
    for workers in (0, 2):
        msg = _error(lambda w=workers: convert_imagefolder(bad, out, num_workers=w, progress=False))
        assert "2 of 14 images" in msg and "garbage.jpg" in msg and "truncated.jpg" in msg and "Fix:" in msg
    assert not (out / "train").exists() and not list(out.glob(".train.*"))  # nothing half-written is left

    zpath = tmp_path / "other.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("top/test/cls/a.jpg", good)
    msg = _error(lambda: convert_imagefolder(zpath, out, progress=False))
    assert "no train/<class>/<image> members" in msg and "test" in msg
    (tmp_path / "broken.zip").write_bytes(b"PK not really")
    assert "not a readable zip" in _error(lambda: convert_imagefolder(tmp_path / "broken.zip", out, progress=False))


def test_destination_rules_and_cli(tmp_path, capsys):
    src = _make_tree(tmp_path / "src", n=8)
    (tmp_path / "taken" / "train").mkdir(parents=True)
    (tmp_path / "taken" / "train" / "precious.txt").write_text("keep me")
    msg = _error(lambda: convert_imagefolder(src, tmp_path / "taken", overwrite=True, progress=False))
    assert "never replaced" in msg and (tmp_path / "taken" / "train" / "precious.txt").exists()
    out = tmp_path / "out"
    assert main(["convert", str(src), str(out), "--workers", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["n_images"] == 8
    assert main(["convert", str(src), str(out), "--workers", "0"]) == 1  # exists: one line naming the fix
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--overwrite" in err
    assert main(["convert", str(src), str(out), "--workers", "0", "--overwrite"]) == 0
    assert read_meta(out)["n_images"] == 8 and read_meta(out / "train")["split"] == "train"
    assert sorted(p.name for p in out.iterdir()) == ["train"]  # no partial or old copy left beside it
    assert len(make_stream_loader(out, 4, image_size=8)) == 2  # the converted root, split "train"


# ----------------------------------------------------------------------------- decoding

def test_decoder_reads_every_kept_mode_like_pil():
    rng = np.random.default_rng(2)
    arr = rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    for fmt, modes in (("JPEG", ("RGB", "L", "CMYK")), ("PNG", ("RGB", "L", "P", "RGBA", "LA", "1"))):
        for mode in modes:
            out = io.BytesIO()
            Image.fromarray(arr).convert(mode).save(out, fmt)
            raw = out.getvalue()
            assert _check_image(raw, None) == (raw, False)  # stored as it is
            ref = np.asarray(Image.open(io.BytesIO(raw)).convert("RGB")).transpose(2, 0, 1)
            assert torch.equal(decode_rgb(raw), torch.from_numpy(ref.copy())), (fmt, mode)


def test_fit_square_sees_the_borders():
    img = torch.arange(40, dtype=torch.uint8).view(1, 1, 40).expand(3, 20, 40).contiguous()  # column index
    left, right = fit_square(img, 20, 0.0), fit_square(img, 20, 0.999)
    assert int(left[0, 0, 0]) == 0 and int(right[0, 0, -1]) == 39  # u spans every offset along the long side
    squash = fit_square(img, 10, fit="squash")
    assert squash.shape == (3, 10, 10) and int(squash[0, 0, 0]) <= 2 and int(squash[0, 0, -1]) >= 37
    assert working_size_for(128, (0.25, 1.0)) == 256 and working_size_for(32, (0.3, 1.0)) == 64
    us = [crop_position(0, e, i) for e in range(3) for i in range(200)]
    assert 0 <= min(us) and max(us) < 1 and len(set(us)) == len(us)


# ----------------------------------------------------------------------------- sharding and resume

@pytest.fixture
def ranks(monkeypatch):
    """Build a loader as rank ``r`` of ``world`` processes (litdata reads WORLD_SIZE / GLOBAL_RANK)."""

    def build(path, rank: int, world: int, **kw):
        monkeypatch.setenv("WORLD_SIZE", str(world))
        monkeypatch.setenv("GLOBAL_RANK", str(rank))
        kw.setdefault("image_size", SIZE)
        return make_stream_loader(str(path), expect_world_size=world, expect_rank=rank, **kw)

    return build


@pytest.mark.parametrize("workers", [0, 2])
def test_one_epoch_over_two_ranks_visits_every_image_once(converted, ranks, workers):
    seen: list[int] = []
    per_rank = []
    for rank in range(2):
        loader = ranks(converted, rank, 2, batch_size=10, num_workers=workers, seed=5)
        ids = [b["id"].tolist() for b in loader]
        assert len(ids) == len(loader) == 10 and all(len(b) == 10 for b in ids)
        per_rank.append(sum(ids, []))
        seen += per_rank[-1]
    assert sorted(seen) == list(range(N))  # each image on exactly one rank, once
    assert not set(per_rank[0]) & set(per_rank[1])


def test_loader_made_before_the_process_group_is_refused(converted, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("GLOBAL_RANK", raising=False)
    with pytest.raises(RuntimeError, match="after fabric.launch"):
        make_stream_loader(str(converted), 10, image_size=SIZE, expect_world_size=2, expect_rank=1)


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_mid_epoch_gives_the_remaining_batches(converted, ranks, tmp_path, workers):
    k = 3  # batches taken before the pause (mid-epoch: an epoch has 12 per rank)

    def stream(rank):
        return StreamBatches(ranks(converted, rank, 2, batch_size=8, num_workers=workers, seed=7))

    for rank in range(2):
        full = stream(rank)
        steps = 2 * full.steps_per_epoch  # through the epoch boundary into the next epoch
        assert full.steps_per_epoch == 12
        want = [(b.ids.tolist(), b.labels.tolist()) for b in (full.next_batch() for _ in range(steps))]
        assert [w[0] for w in want[:12]] != [w[0] for w in want[12:]]  # a new order in the next epoch

        paused = stream(0)  # the checkpoint is written by rank 0; its state resumes every rank
        head = [paused.next_batch().ids.tolist() for _ in range(k)]
        torch.save(paused.state_dict(), tmp_path / "state.pt")
        state = torch.load(tmp_path / "state.pt", weights_only=True)  # as the checkpoint is read
        resumed = stream(rank)
        resumed.load_state_dict(state)
        assert resumed.position == k
        got = [(b.ids.tolist(), b.labels.tolist()) for b in (resumed.next_batch() for _ in range(steps - k))]
        assert got == want[k:]
        if rank == 0:
            assert head == [w[0] for w in want[:k]]


def test_resume_on_moved_data_other_data_and_another_worker_count(converted, tree, tmp_path, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("GLOBAL_RANK", raising=False)

    def stream(path, workers=0):
        return StreamBatches(make_stream_loader(str(path), 8, image_size=SIZE, seed=2, num_workers=workers))

    full = stream(converted)
    want = [full.next_batch().ids.tolist() for _ in range(full.steps_per_epoch)]
    paused = stream(converted)
    for _ in range(4):
        paused.next_batch()
    state = paused.state_dict()
    moved = shutil.copytree(converted, tmp_path / "elsewhere")  # another mount point, the same chunks
    resumed = stream(moved)
    resumed.load_state_dict(state)
    assert [resumed.next_batch().ids.tolist() for _ in range(len(want) - 4)] == want[4:]

    other = tmp_path / "other"
    convert_imagefolder(tree, other, num_workers=0, chunk_bytes="16kb", shuffle_seed=1, progress=False)
    with pytest.raises(DataError, match="other data"):
        stream(other).load_state_dict(state)

    elastic = stream(converted, workers=2)  # another worker count: no repeats within the epoch, a warning
    with pytest.warns(UserWarning, match="num_workers 2"):
        elastic.load_state_dict(state)
    head = sum(want[:4], [])
    rest = [i for b in elastic.loader for i in b["id"].tolist()]  # the rest of the interrupted epoch
    # - 8: on a new grid litdata may end the epoch one batch early (measured: 160 of the 168 remaining images)
    assert len(rest) >= len(sum(want[4:], [])) - 8 and not set(head) & set(rest) and len(set(rest)) == len(rest)


def test_working_images_and_device_decoding_agree(converted, tree):
    """Worker-decoded batches equal the source images fitted at their crop position, and decoding the
    batch in the main process (the decode_device path, here on the CPU) gives the same tensors."""
    listed = (converted / "files.txt").read_text().splitlines()
    a = StreamBatches(make_stream_loader(str(converted), 16, image_size=SIZE, seed=1, num_workers=0))
    b = StreamBatches(make_stream_loader(str(converted), 16, image_size=SIZE, seed=1, num_workers=0, decode_device="cpu"))
    for _ in range(3):
        x, y = a.next_batch(), b.next_batch()
        assert x.images.dtype == torch.uint8 and x.images.shape == (16, 3, SIZE, SIZE)
        assert torch.equal(x.ids, y.ids) and torch.equal(x.images, y.images)
        for img, idx in zip(x.images, x.ids.tolist()):
            src = decode_rgb((tree / listed[idx]).read_bytes())
            assert torch.equal(img, fit_square(src, SIZE, crop_position(1, a.epoch, idx)))


def test_meta_errors(tmp_path):
    assert "aot convert" in _error(lambda: read_meta(tmp_path))
    (tmp_path / "meta.json").write_text(json.dumps({"format": "something else"}))
    assert "not written by aot convert" in _error(lambda: read_meta(tmp_path))
    assert os.path.exists(tmp_path / "meta.json")


def _stream_losses(run: Path) -> dict:
    import csv

    with open(run / "metrics.csv") as f:
        return {int(r["step"]): float(r["loss"]) for r in csv.DictReader(f)}


def test_pretraining_on_the_stream_resumes_to_the_uninterrupted_run(converted, tmp_path, monkeypatch):
    """data.name=stream through the trainer: the stream's position is checkpointed with the step, so a run
    paused mid-epoch (and across the epoch boundary: 200 images / batch 16 = 12 steps) continues the loss
    trajectory of an uninterrupted one; run files record the stream's provenance."""
    from aot_lib import train
    from helpers import tiny_config

    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    common = ["data.name=stream", f"data.root={converted.parent}", "data.image_size=null", "data.stream_workers=0",
              "data.stream_working_size=16", "optim.batch_size=16", "optim.max_steps=14", "run.ckpt_every=100"]
    full = train.pretrain(tiny_config(tmp_path, tmp_path / "runs", "run.name=full", *common))
    assert full["step"] == 14 and full["data"]["dataset"] == "stream"
    assert train.pretrain(tiny_config(tmp_path, tmp_path / "runs", "run.name=part", *common, "run.stop_after=5"))["paused"]
    assert "data_stream" in train.load_checkpoint(tmp_path / "runs" / "part" / "last.ckpt")
    train.pretrain(tiny_config(tmp_path, tmp_path / "runs", "run.name=part", *common))
    a, b = _stream_losses(tmp_path / "runs" / "full"), _stream_losses(tmp_path / "runs" / "part")
    assert sorted(a) == sorted(b) == list(range(1, 15))
    for step in a:  # same batches, views and weights: equal up to float32 run-to-run determinism
        assert b[step] == pytest.approx(a[step], rel=1e-6, abs=1e-7), step


def test_stream_config_is_checked():
    from aot_lib.training.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="data.train_subset=100 does not apply to data.name=stream"):
        load_config(None, ["data.name=stream", "data.root=x", "data.train_subset=100"])


@pytest.mark.parametrize("root", [None, "train"], ids=["unset", "relative"])
def test_the_stream_is_found_under_aot_data_like_every_source(converted, root, tmp_path, monkeypatch):
    """data.root for data.name=stream is resolved as for the in-memory sources (aot_lib.data.datasets.data_root):
    unset, it is $AOT_DATA; relative and absent from the working folder, it is looked for under $AOT_DATA."""
    from types import SimpleNamespace

    from aot_lib.training.config import load_config
    from aot_lib.training.pretrain import _stream_source

    monkeypatch.chdir(tmp_path)  # no 'train' folder here
    monkeypatch.setenv("AOT_DATA", str(converted if root is None else converted.parent))
    cfg = load_config(None, ["data.name=stream", f"data.root={'null' if root is None else root}", "data.image_size=null",
                             "data.stream_workers=0", "data.stream_working_size=16", "optim.batch_size=8"])
    fabric = SimpleNamespace(world_size=1, global_rank=0, device=torch.device("cpu"))
    stream, provenance = _stream_source(fabric, cfg)
    assert provenance["path"] == str(converted.resolve()) and provenance["n_images"] == N
    assert stream.n_images == N and stream.next().shape == (8, 3, 16, 16)


def test_cli_convert_is_registered(tree, tmp_path, capsys):
    from aot_lib.cli import main as cli

    assert cli(["convert", str(tree), str(tmp_path / "out"), "--split", "train", "--workers", "1"]) == 0
    assert (tmp_path / "out" / "train" / "meta.json").exists()
    assert cli(["convert", str(tmp_path / "nowhere"), str(tmp_path / "out2")]) == 1
    assert "aot convert:" in capsys.readouterr().err


def test_one_lister_for_memory_and_stream_skips_macos_and_hidden_files(tmp_path, monkeypatch):
    """The in-memory loader and the converter list a tree (and a zip of it) with aot_lib.data.imagefolder: the same
    images in the same order, without macOS's __MACOSX/ and ._name resource forks, hidden files or hidden folders."""
    from aot_lib.data.convert import _list_source
    from aot_lib.data.datasets import load_split
    from helpers import make_imagefolder

    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1, size=8)
    junk = (b"\x00\x05\x16\x07" + b"\x00" * 60)  # an AppleDouble header: not an image
    for rel in ("train/cat/._0000.png", "train/cat/.hidden.png", "train/__MACOSX/cat/0000.png",
                "train/.trash/0000.png", "test/.DS_Store"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(junk)
    zpath = tmp_path / "tree.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for f in sorted(tree.rglob("*")):
            if f.is_file():
                zf.write(f, f"tiny/{f.relative_to(tree)}")
                zf.write(f, f"__MACOSX/tiny/{f.parent.relative_to(tree)}/._{f.name}")  # what macOS's zip adds
    want = ["train/cat/0000.png", "train/cat/0001.png", "train/dog/0000.png", "train/dog/0001.png"]
    for src, prefix in ((tree, ""), (zpath, "tiny/")):
        listed = _list_source(src, "train")
        assert (listed.classes, listed.files, listed.labels) == (["cat", "dog"], [prefix + f for f in want], [0, 0, 1, 1])
        data = load_split("imagefolder", "train", root=src, image_size=8)  # decodes every listed file: junk would fail
        assert data.classes == ["cat", "dog"] and data.labels.tolist() == [0, 0, 1, 1]
