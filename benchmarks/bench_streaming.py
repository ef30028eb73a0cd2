"""Streaming data (aot_lib.data.convert, aot_lib.data.streaming): conversion speed, then images/s and peak memory of the loader.

    AOT_DATA=../shared/data python benchmarks/bench_streaming.py [--workers 0 1 2] [--epochs 3] [--size 256]

On the Imagenette-160 subset zip (3,000 train images, about 160 x 213 px): converts the train split and a
1/3 subset of it to a temporary folder, then streams working images of ``--size`` px (256: the ImageNet
recipe's, :func:`aot_lib.data.decode.working_size_for`) with 0, 1 and 2 loader workers (each run in a fresh process), reporting images/s
and the peak memory of the main process plus its workers (:class:`PeakRSS`: summed RSS and PSS with
psutil when installed, else the main process's ru_maxrss). Memory must not grow with the number of
images streamed: each worker count runs 1 epoch and ``--epochs`` epochs of the full set (``--epochs`` x
the images) and 1 epoch of the 1/3 subset, and ``memory_ratio`` compares their PSS (1.0: no growth).
The chunks are memory-mapped, so the pages of a chunk being read count as shared, reclaimable page cache.

Also times one core decoding ImageNet-sized JPEGs (Imagenette images upscaled to 500 x 375, quality 90,
smooth and with added grain) and fitting them to ``--size`` px: the per-core rate behind the README's
per-GPU estimate.
"""
import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import torch
from _common import ROOT, write

from aot_lib.data.convert import convert_imagefolder
from aot_lib.data.decode import decode_rgb, fit_square
from aot_lib.data.stream_batches import StreamBatches
from aot_lib.data.streaming import make_stream_loader

ZIP = "imagenette160-subset.zip"


class PeakRSS:
    """Peak memory of the main process plus its workers while the block runs, in MB: the sum of RSS
    (counts shared pages once per process: libraries, the memory-mapped chunks) and the sum of PSS (each
    shared page split among its sharers: what the job costs the machine)."""

    def __init__(self, interval: float = 0.02, pss_every: int = 25):
        # RSS every 20 ms (cheap); PSS reads /proc/PID/smaps (about 10 ms a process), so every 25th sample (0.5 s)
        self.interval, self.pss_every, self.rss, self.pss, self.how = interval, pss_every, 0.0, 0.0, ""

    def _sample(self, procs, full: bool):
        rss = pss = 0
        for p in procs:
            try:
                if full:
                    m = p.memory_full_info()
                    pss += m.pss
                else:
                    m = p.memory_info()
                rss += m.rss
            except Exception:  # noqa: BLE001 - a worker that just exited
                continue
        self.rss = max(self.rss, rss / 2**20)
        if full:
            self.pss = max(self.pss, pss / 2**20)

    def _run(self):
        import psutil

        me, k = psutil.Process(), 0
        while not self._stop.is_set():
            self._sample([me, *me.children(recursive=True)], full=k % self.pss_every == 0)
            k += 1
            self._stop.wait(self.interval)

    def __enter__(self):
        try:
            import psutil  # noqa: F401
        except ImportError:
            self.how, self._thread = "ru_maxrss of the main process only (psutil not installed)", None
            return self
        self.how = "psutil: sums over the main process and its workers; RSS every 20 ms, PSS every 0.5 s"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is None:
            import resource

            self.rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            self.pss = float("nan")
        else:
            self._stop.set()
            self._thread.join()
        return False


def subset_zip(src: Path, dest: Path, every: int = 3) -> Path:
    """Every ``every``-th image of each class of the train split (and nothing else)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        names = sorted(n for n in zin.namelist() if n.split("/")[-3:-2] == ["train"] and not n.endswith("/"))
        for k, n in enumerate(names):
            if k % every == 0:
                zout.writestr(n, zin.read(n))
    return dest


def stream(path: Path, workers: int, epochs: int, batch: int, size: int) -> dict:
    if workers == 0:
        torch.set_num_threads(1)  # the main process alone, on one core: comparable to one worker
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        s = StreamBatches(make_stream_loader(str(path), batch, image_size=size, num_workers=workers, seed=0))
        steps = epochs * s.steps_per_epoch
        s.next()  # first batch: worker start-up and the first chunk
        t1 = time.perf_counter()
        for _ in range(steps - 1):
            s.next()
        t2 = time.perf_counter()
        del s
    n = steps * batch
    return {"workers": workers, "epochs": epochs, "images": n, "first_batch_s": round(t1 - t0, 3),
            "images_per_s": round((n - batch) / max(t2 - t1, 1e-9), 1), "peak_rss_mb": round(mem.rss, 1),
            "peak_pss_mb": round(mem.pss, 1), "memory_measured_by": mem.how}


def run_fresh(path: Path, workers: int, epochs: int, args) -> dict:
    """:func:`stream` in a new Python process, so no run inherits another's memory."""
    cmd = [sys.executable, __file__, "--one", str(path), str(workers), str(epochs), "--batch", str(args.batch),
           "--size", str(args.size)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def imagenet_like_rate(zpath: Path, size: int, n: int = 64, repeats: int = 3) -> dict:
    """One core: decode a 500 x 375 JPEG (q90) and fit it to ``size`` px, images/s (best of ``repeats``
    passes: the least disturbed by other work on a shared machine). Two versions of each image: smooth
    (upscaled Imagenette) and grainy (plus Gaussian noise of sigma 8, closer to a photo's file size)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    with zipfile.ZipFile(zpath) as zf:
        names = [m for m in zf.namelist() if m.lower().endswith((".jpeg", ".jpg"))][:n]
        sources = [Image.open(io.BytesIO(zf.read(m))).convert("RGB").resize((500, 375), Image.BICUBIC) for m in names]
    out = {"image": "500x375 JPEG q90 made from Imagenette images (real ImageNet photos average about 110 KB)"}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one core, as in a loader worker
    try:
        for kind, sigma in (("smooth", 0.0), ("grainy", 8.0)):
            blobs = []
            for im in sources:
                if sigma:
                    a = np.asarray(im, dtype=np.float32) + rng.normal(0, sigma, (375, 500, 3))
                    im = Image.fromarray(a.clip(0, 255).astype(np.uint8))
                buf = io.BytesIO()
                im.save(buf, "JPEG", quality=90)
                blobs.append(buf.getvalue())
            best = 0.0
            for _ in range(repeats):
                t = time.perf_counter()
                for k, b in enumerate(blobs):
                    fit_square(decode_rgb(b), size, k / len(blobs))
                best = max(best, len(blobs) / (time.perf_counter() - t))
            out[kind] = {"mean_kb": round(sum(map(len, blobs)) / len(blobs) / 1024, 1), "images_per_s_per_core": round(best, 1)}
    finally:
        torch.set_num_threads(threads)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=3, help="the long run streams this many epochs (memory check)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=256, help="working-image side (the ImageNet recipe's)")
    ap.add_argument("--chunk-bytes", default="8MB", help="8 MB: several chunks from the 23 MB subset (64 MB for ImageNet)")
    ap.add_argument("--one", nargs=3, metavar=("PATH", "WORKERS", "EPOCHS"), help=argparse.SUPPRESS)  # a child run
    args = ap.parse_args()
    if args.one:
        print(json.dumps(stream(Path(args.one[0]), int(args.one[1]), int(args.one[2]), args.batch, args.size)))
        return
    data = Path(os.environ.get("AOT_DATA") or ROOT.parent / "shared" / "data").expanduser()
    zpath = data / ZIP
    if not zpath.exists():
        raise SystemExit(f"{zpath} not found; set AOT_DATA to the folder holding {ZIP}")
    tmp = Path(tempfile.mkdtemp(prefix="bench_streaming_"))
    try:
        t = time.perf_counter()
        meta = convert_imagefolder(zpath, tmp / "full", chunk_bytes=args.chunk_bytes, progress=False)
        convert_s = time.perf_counter() - t
        third = convert_imagefolder(subset_zip(zpath, tmp / "third.zip"), tmp / "third", chunk_bytes=args.chunk_bytes,
                                    progress=False)
        runs = []
        for w in args.workers:
            for name, epochs in (("full", 1), ("full", args.epochs), ("third", 1)):
                runs.append({"data": name, **run_fresh(tmp / name, w, epochs, args)})
        growth = {}
        for w in args.workers:
            r = [x for x in runs if x["workers"] == w]
            growth[f"workers_{w}"] = {f"pss_{args.epochs}x_images_over_1x": round(r[1]["peak_pss_mb"] / r[0]["peak_pss_mb"], 3),
                                      "pss_full_over_third_data": round(r[0]["peak_pss_mb"] / r[2]["peak_pss_mb"], 3)}
        write("streaming", {
            "data": str(zpath), "train_images": meta["n_images"], "subset_images": third["n_images"],
            "conversion": {"seconds": round(convert_s, 2), "images_per_s": round(meta["n_images"] / convert_s, 1),
                           "mb": round(meta["image_bytes"] / 2**20, 1), "workers": os.cpu_count(), "chunk_bytes": args.chunk_bytes},
            "working_size": args.size, "batch": args.batch, "runs": runs, "memory_ratio": growth,
            "imagenet_like_decode": imagenet_like_rate(zpath, args.size),
            "note": "a shared, noisy machine: numbers are indicative",
        })
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
