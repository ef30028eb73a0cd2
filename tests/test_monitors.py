"""Training-time monitors (aot_lib.training.monitors): each measurement against an independent float64 reference, and
the trainer's wiring (logged columns, a trajectory that does not depend on them, clear refusals)."""
import csv
import math

import numpy as np
import pytest
import torch

from aot_lib import create_model, train
from aot_lib.training.config import ConfigError
from aot_lib.models.layers import MSSA
from aot_lib.training.monitors import audit_layers, cls_attention, patch_pca, rankme, theorem1_terms
from helpers import free_port, make_imagefolder, tiny_config

F64 = dict(rtol=1e-10, atol=1e-12)  # float64 references computed another way: agreement to rounding


# ----------------------------------------------------------------------------- RankMe

def test_rankme_counts_equal_energy_directions():
    """k orthogonal directions of equal energy: RankMe = k. The eps = 1e-7 of the definition adds
    (D - k) * 1e-7 * log(1e7) to the entropy and shifts the k nonzero terms by 1e-7: below 1e-4 relative."""
    q, _ = torch.linalg.qr(torch.randn(32, 32, dtype=torch.float64))
    for k in (1, 3, 10, 32):
        codes = torch.randn(200, k, dtype=torch.float64)
        u, _, _ = torch.linalg.svd(codes, full_matrices=False)  # orthonormal columns: equal singular values
        emb = u @ q[:k] * 5.0  # (200, 32), rank k, k equal singular values
        assert rankme(emb) == pytest.approx(k, rel=1e-4)


def test_rankme_matches_numpy_on_a_generic_matrix():
    g = np.random.default_rng(0)
    a = g.normal(size=(64, 16)) @ np.diag(np.linspace(0.1, 3.0, 16))
    s = np.linalg.svd(a, compute_uv=False)
    p = s / s.sum() + 1e-7
    assert rankme(torch.from_numpy(a)) == pytest.approx(math.exp(-(p * np.log(p)).sum()), rel=1e-12)
    with pytest.raises(ValueError, match=r"^rankme expects \(N, D\) embeddings"):
        rankme(torch.zeros(2, 3, 4))


# ----------------------------------------------------------------------------- Theorem 1

def _theorem1_reference(y: np.ndarray, eps: float, directions: np.ndarray, t_max=3.0, n_points=17):
    """Appendix A's normalisation, the trapezoid rule for the Epps-Pulley integral and slogdet, in numpy."""
    n, d = y.shape
    yc = y - y.mean(0)
    yc = yc * np.sqrt(n * d / (yc**2).sum())  # tr(Sigma) = d
    sigma = yc.T @ yc / n
    t = np.linspace(-t_max, t_max, 2 * n_points - 1)  # the symmetric grid the half-line rule doubles
    w = np.full(t.shape, t[1] - t[0])
    w[0] = w[-1] = (t[1] - t[0]) / 2
    proj = yc @ directions  # (n, K)
    cf = np.exp(1j * proj[:, :, None] * t).mean(0)  # (K, T)
    ep = ((np.abs(cf - np.exp(-t**2 / 2)) ** 2) * np.exp(-t**2 / 2) * w).sum(-1).mean()
    cw = 0.25 * ((t**4 * np.exp(-t**2) * np.exp(-t**2 / 2)) * w).sum()
    c = d / eps**2
    gap = 0.5 * d * math.log1p(c) - 0.5 * np.linalg.slogdet(np.eye(d) + c * sigma)[1]
    return ep, 2 * cw / (d * (d + 2)) * ((sigma - np.eye(d)) ** 2).sum(), gap


def test_theorem1_terms_match_a_numpy_reference():
    from aot_lib.objectives.sigreg import sample_directions

    g = np.random.default_rng(1)
    y = g.normal(size=(300, 8)) @ np.diag([3.0, 2.0, 1.0, 1.0, 0.5, 0.5, 0.2, 0.1]) + 4.0  # anisotropic, off-centre
    got = theorem1_terms(torch.from_numpy(y), eps=0.5, num_slices=12, seed=3)
    directions = sample_directions(8, 12, 3, dtype=torch.float64).numpy()
    ep, s2, gap = _theorem1_reference(y, 0.5, directions)
    assert got["sigreg"] == pytest.approx(ep, rel=1e-9)  # the same directions; cos/sin by recurrence vs exp(i t x)
    assert got["sigreg2"] == pytest.approx(s2, rel=1e-10)
    assert got["rate_gap"] == pytest.approx(gap, rel=1e-10)


def test_theorem1_terms_follow_the_quadrature_they_are_given():
    """A grid other than the default (t_max 2.5, 9 nodes) reaches both the statistic and C_w: against the
    numpy reference on that grid, and unequal to the default grid's values (so the test can tell them apart)."""
    from aot_lib.objectives.sigreg import sample_directions

    y = np.random.default_rng(2).normal(size=(200, 6)) @ np.diag([2.0, 1.5, 1.0, 1.0, 0.7, 0.3])
    got = theorem1_terms(torch.from_numpy(y), num_slices=7, seed=1, t_max=2.5, n_points=9)
    directions = sample_directions(6, 7, 1, dtype=torch.float64).numpy()
    ep, s2, _ = _theorem1_reference(y, 0.5, directions, t_max=2.5, n_points=9)
    assert got["sigreg"] == pytest.approx(ep, rel=1e-9)  # as in the test above
    assert got["sigreg2"] == pytest.approx(s2, rel=1e-10)
    default = theorem1_terms(torch.from_numpy(y), num_slices=7, seed=1)
    assert abs(default["sigreg"] - got["sigreg"]) > 1e-3 * got["sigreg"]
    assert abs(default["sigreg2"] - got["sigreg2"]) > 1e-3 * got["sigreg2"]


def _theorem1_worker(rank, world, port, y, out):
    import os

    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    out[rank] = theorem1_terms(y, num_slices=5, seed=4)
    dist.destroy_process_group()


def test_theorem1_terms_of_one_batch_on_two_processes_equal_one_process():
    """The monitor's fixed batch is the same on every rank; the statistic is all-reduced over ranks inside
    epps_pulley, so the per-sample value must divide by the global count n * world and come out unchanged."""
    import torch.multiprocessing as mp

    y = torch.randn(60, 5, dtype=torch.float64)
    out = mp.Manager().dict()
    mp.spawn(_theorem1_worker, args=(2, free_port(), y, out), nprocs=2, join=True)
    ref = theorem1_terms(y, num_slices=5, seed=4)
    for rank in range(2):
        assert out[rank] == pytest.approx(ref, rel=1e-12)  # the same float64 sums in another order


def test_theorem1_terms_vanish_together_at_isotropy():
    """Whitened embeddings have Sigma_hat = I exactly: rate gap and covariance component are 0 (to rounding),
    while the sliced statistic keeps only its finite-sample and higher-moment part."""
    y = torch.randn(400, 6, dtype=torch.float64)
    y = y - y.mean(0)
    y = y @ torch.linalg.inv(torch.linalg.cholesky(y.T @ y / 400)).T  # sample covariance = I
    got = theorem1_terms(y, eps=0.5, num_slices=8)
    assert abs(got["rate_gap"]) < 1e-10 and got["sigreg2"] < 1e-20
    assert 0 < got["sigreg"] < 0.05


# ----------------------------------------------------------------------------- MSSA attention, cls attention

def test_mssa_attention_weights_reproduce_forward():
    torch.manual_seed(0)
    m = MSSA(12, 3).double()
    torch.nn.init.normal_(m.proj.bias)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    a = m.attention(x)
    assert a.shape == (2, 3, 5, 5)
    torch.testing.assert_close(a.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64), **F64)
    w = m.qkv(x).reshape(2, 5, 3, 4).transpose(1, 2)
    out = (a @ w).transpose(1, 2).reshape(2, 5, 12)
    torch.testing.assert_close(m.proj(out), m(x), **F64)


def test_cls_attention_is_the_first_row_of_each_layers_attention():
    torch.manual_seed(0)
    enc = create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=16, num_heads=2, depth=2).double()
    x = torch.randn(3, 3, 16, 16, dtype=torch.float64)
    att = cls_attention(enc, x)
    assert att.shape == (2, 3, 2, 16)
    states = enc.forward_intermediates(x)
    for layer, (block, s) in enumerate(zip(enc.blocks, states)):
        ref = block.mssa.attention(block.norm(s.z))[:, :, 0, 1:]
        torch.testing.assert_close(att[layer], ref, **F64)


# ----------------------------------------------------------------------------- the white-box audit

def _rate_by_hand(z_rows: torch.Tensor, U: torch.Tensor, eps: float) -> float:
    """Mean over images of sum_k 1/2 logdet(I_p + p/(N eps^2) U_k^T Z Z^T U_k), tokens rescaled to unit RMS,
    with slogdet on the p x p matrix (the library uses Cholesky on the smaller Gram side)."""
    total = 0.0
    for img in z_rows:
        z = img / img.square().mean(-1, keepdim=True).sqrt()
        Z = z.T  # (d, N)
        n = Z.shape[1]
        for Uk in U:
            p = Uk.shape[1]
            M = torch.eye(p, dtype=Z.dtype) + p / (n * eps**2) * Uk.T @ Z @ Z.T @ Uk
            total += 0.5 * torch.linalg.slogdet(M)[1].item()
    return total / len(z_rows)


def test_audit_of_aot_admm_by_hand():
    torch.manual_seed(0)
    enc = create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=16, num_heads=2, depth=2,
                       lambd=0.3, rho=2.0, eta=0.2).double()
    with torch.no_grad():  # away from the initial point, so learned and initial values differ
        for blk in enc.blocks:
            blk.coef_logits.add_(torch.randn(3, dtype=torch.float64))
            blk.tau_raw.add_(0.1 * torch.randn(16, dtype=torch.float64))
    x = torch.randn(3, 3, 16, 16, dtype=torch.float64)
    rows = audit_layers(enc, x, eps=0.7)
    states = enc.forward_intermediates(x)
    assert len(rows) == 2
    for i, (row, blk) in enumerate(zip(rows, enc.blocks)):
        U = blk.mssa.subspaces().detach()
        s_in, s_out = states[i], states[i + 1]
        assert row["rc_in"] == pytest.approx(_rate_by_hand(s_in.z, U, 0.7), rel=1e-10)
        assert row["rc_out"] == pytest.approx(_rate_by_hand(s_out.z, U, 0.7), rel=1e-10)
        v = s_out.v
        assert row["zeros"] == pytest.approx((v == 0).sum().item() / v.numel(), abs=0) and 0 < row["zeros"] < 1
        assert row["l1"] == pytest.approx(v.abs().sum().item() / v.numel(), rel=1e-12)
        assert row["primal"] == pytest.approx(((s_out.z - v).norm() / s_out.z.norm()).item(), rel=1e-12)
        # effective rank of the layer's output Z, all tokens as rows, centred: numpy's singular values
        zz = s_out.z.detach().reshape(-1, 16).numpy()
        sv = np.linalg.svd(zz - zz.mean(0), compute_uv=False)
        p = sv / sv.sum() + 1e-7
        assert row["erank"] == pytest.approx(float(np.exp(-(p * np.log(p)).sum())), rel=1e-10)
        a, b, c = torch.softmax(blk.coef_logits.detach(), 0).tolist()
        assert (row["a"], row["b"], row["c"]) == pytest.approx((a, b, c), rel=1e-12)
        assert (row["a0"], row["b0"], row["c0"]) == pytest.approx((1 - 0.2 - 0.4, 0.2, 0.4), rel=1e-12)
        tau = torch.nn.functional.softplus(blk.tau_raw.detach())
        assert (row["tau_mean"], row["tau_min"], row["tau_max"]) == pytest.approx(
            (tau.mean().item(), tau.min().item(), tau.max().item()), rel=1e-12)
        assert row["tau0"] == pytest.approx(0.15)
    assert enc.training  # left as it was found


def test_audit_of_crate_reads_its_tokens_and_refuses_vit():
    torch.manual_seed(0)
    enc = create_model("crate_tiny", img_size=16, patch_size=4, embed_dim=16, num_heads=2, depth=2).double()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    rows = audit_layers(enc, x)
    states = enc.forward_intermediates(x)
    for i, row in enumerate(rows):
        U = enc.blocks[i].mssa.subspaces().detach()
        assert row["rc_in"] == pytest.approx(_rate_by_hand(states[i].tokens, U, 0.5), rel=1e-10)
        out = states[i + 1].tokens
        assert row["zeros"] == pytest.approx((out == 0).double().mean().item(), abs=0) and row["zeros"] > 0  # ISTA's ReLU
        assert "tau_mean" not in row and "primal" not in row
    vit = create_model("vit_tiny", img_size=16, patch_size=4, embed_dim=16, num_heads=2, depth=1)
    with pytest.raises(ValueError, match=r"^audit_layers needs blocks with an MSSA \(AoT-ADMM, CRATE, AoT\); "
                                         r"block 0 is ViTBlock$"):
        audit_layers(vit, torch.randn(1, 3, 16, 16))


# ----------------------------------------------------------------------------- in the trainer

@pytest.fixture
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    return make_imagefolder(tmp_path / "data"), tmp_path / "runs"


def _rows(run):
    with open(run / "metrics.csv") as f:
        return list(csv.DictReader(f))


def test_trainer_logs_the_monitors_and_its_trajectory_does_not_depend_on_them(setup):
    data, out = setup
    train.pretrain(tiny_config(data, out, "run.name=plain"))
    cfg = tiny_config(data, out, "run.name=monitored", "monitor.every=2", "monitor.images=8", "monitor.knn=true",
                      "monitor.knn_bank=12", "monitor.knn_val=4", "probe.val_fraction=0.25")
    metrics = train.pretrain(cfg)
    plain, monitored = _rows(out / "plain"), _rows(out / "monitored")
    loss = lambda rows: {r["step"]: r["loss"] for r in rows if r.get("loss")}  # noqa: E731
    assert loss(plain) == loss(monitored)  # the same numbers, to the last printed digit
    logged = {r["step"]: r for r in monitored if r.get("rankme")}
    assert sorted(logged, key=int) == ["2", "4"]
    for key in ("theorem1/rate_gap", "theorem1/sigreg", "rankme/features", "audit/l1/rc_in", "audit/l1/tau_mean",
                "audit/l1/zeros", "knn/val_top1"):
        assert all(math.isfinite(float(r[key])) for r in logged.values()), key
    assert 1 <= float(logged["4"]["rankme"]) <= 8  # (B = 8, D = 8) embeddings
    assert set(metrics["monitors"]) >= {"rankme", "theorem1/rate_gap", "audit/l1/primal", "knn/val_top1"}
    assert {float(r["knn/val_top1"]) for r in logged.values()} <= {0.0, 25.0, 50.0, 75.0, 100.0}  # 4 images
    # resuming with other monitor settings is allowed: they do not change what is trained
    train.pretrain(tiny_config(data, out, "run.name=monitored", "monitor.every=3", "monitor.images=8",
                               "optim.max_steps=4"))


@pytest.mark.parametrize("overrides, message", [
    (["monitor.every=-1"], r"^monitor.every must be an integer >= 0"),
    (["monitor.eps=0"], r"^monitor.eps must be"),
    (["monitor.every=5", "model.name=vit_tiny", "model.overrides={embed_dim: 32, depth: 1, num_heads: 2, patch_size: 4}"],
     r"^monitor.audit measures MSSA layers .* vit_tiny has none: set monitor.audit=false$"),
    (["monitor.every=5", "data.name=stream"], r"^monitor.theorem1 and monitor.audit use a fixed batch"),
    (["monitor.every=5", "monitor.theorem1=false", "monitor.audit=false", "monitor.knn=true", "data.name=stream"],
     r"^monitor.knn uses labelled in-memory training images; with data.name=stream set monitor.knn=false$"),
    (["monitor.knn_bank=0"], r"^monitor.knn_bank must be an integer >= 1"),
])
def test_monitor_config_refusals(setup, overrides, message):
    data, out = setup
    with pytest.raises(ConfigError, match=message):
        train.pretrain(tiny_config(data, out, *overrides, *(["data.image_size=null"] if "data.name=stream" in overrides else [])))


def test_csv_rows_of_one_step_merge_within_a_launch_and_the_later_launch_wins(tmp_path):
    from aot_lib.training.runs import merge_csv_logs

    def write(version: int, text: str):
        d = tmp_path / "logs" / f"version_{version}"
        d.mkdir(parents=True)
        (d / "metrics.csv").write_text(text)

    write(0, "loss,rankme,step\n1.0,,1\n,5.0,1\n0.9,,2\n,4.0,2\n")  # launch 1: loss and monitor rows apart
    write(1, "loss,rankme,step\n0.8,,2\n0.7,,3\n")  # launch 2 resumed at step 1: its step 2 replaces launch 1's
    merge_csv_logs(tmp_path)
    assert _rows(tmp_path) == [{"loss": "1.0", "rankme": "5.0", "step": "1"}, {"loss": "0.8", "rankme": "", "step": "2"},
                               {"loss": "0.7", "rankme": "", "step": "3"}]


def test_lejepa_model_hands_the_monitors_the_embeddings_it_computed_the_loss_from():
    from aot_lib.objectives.heads import LeJEPAProjector
    from aot_lib.objectives.lejepa import LeJEPALoss, LeJEPAModel

    torch.manual_seed(0)
    enc = create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=16, num_heads=2, depth=1, num_classes=0)
    model = LeJEPAModel(enc, LeJEPAProjector(16, 32, 8), LeJEPALoss(num_global=2, num_slices=8)).double().eval()
    views = [torch.randn(4, 3, s, s, dtype=torch.float64) for s in (16, 16, 8, 8)]
    out = model(views)
    want = torch.stack([model.projector(enc.forward_features(v)) for v in views])
    torch.testing.assert_close(out.embeddings, want, **F64)
    assert not out.embeddings.requires_grad
    torch.testing.assert_close(out.loss, model.loss(want).loss, **F64)


def _tiny_lejepa():
    from aot_lib.objectives.heads import LeJEPAProjector
    from aot_lib.objectives.lejepa import LeJEPALoss, LeJEPAModel

    torch.manual_seed(0)
    enc = create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=16, num_heads=2, depth=2, num_classes=0)
    return LeJEPAModel(enc, LeJEPAProjector(16, 32, 8), LeJEPALoss(num_global=2, num_slices=8)).double()


def test_build_monitors_builds_what_the_config_asks_for():
    from aot_lib.training.monitors import RankMe, Theorem1Monitor, WhiteBoxAudit, build_monitors

    images = torch.randn(4, 3, 16, 16)
    mc = {"every": 7, "images": 4, "rankme": True, "theorem1": True, "audit": True, "eps": 0.3, "knn": False}
    built = build_monitors(mc, images, seed=5)
    assert [type(m) for m in built] == [RankMe, Theorem1Monitor, WhiteBoxAudit]
    assert all(m.every == 7 for m in built)
    assert built[1].images is images and built[1].eps == 0.3 and built[1].seed == 5
    assert build_monitors(mc, images)[1].seed == 0  # the SIGReg directions of a run without a seed
    assert built[2].images is images and built[2].eps == 0.3
    assert build_monitors({**mc, "every": 0}, images) == []
    assert [type(m) for m in build_monitors({**mc, "rankme": False, "theorem1": False}, images)] == [WhiteBoxAudit]
    assert [type(m) for m in build_monitors({**mc, "theorem1": False, "audit": False}, None)] == [RankMe]
    for flags in ({"audit": False}, {"theorem1": False}):
        with pytest.raises(ValueError, match=r"^monitor.theorem1 and monitor.audit need a fixed batch of images "
                                             r"\(in-memory data\); set them to false for data.name=stream$"):
            build_monitors({**mc, **flags}, None)


def test_monitor_callbacks_log_their_functions_values_under_their_names():
    from aot_lib.training.monitors import RankMe, StepContext, Theorem1Monitor, WhiteBoxAudit

    model = _tiny_lejepa()
    images = torch.randn(6, 3, 16, 16, dtype=torch.float64)
    emb = torch.randn(3, 6, 8, dtype=torch.float64)
    ctx = StepContext(step=4, out={"embeddings": emb}, model=model)
    assert RankMe(1)(ctx) == {"rankme": rankme(emb[0])}
    with pytest.raises(KeyError, match=r"^\"RankMe reads the step dict's 'embeddings'; this step function returns "
                                       r"none\"$"):
        RankMe(1)(StepContext(step=4, out={}, model=model))

    got = Theorem1Monitor(1, images=images, eps=0.7, num_slices=5, seed=2)(ctx)
    model.eval()
    with torch.no_grad():
        feats = model.encoder.forward_features(images)
        proj = model.projector(feats)
    model.train()
    want = {f"theorem1/{k}": v for k, v in theorem1_terms(proj, eps=0.7, num_slices=5, seed=2).items()}
    want.update({"rankme/features": rankme(feats), "rankme/embeddings": rankme(proj)})
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-9), k
    assert model.training  # left as it was found

    got = WhiteBoxAudit(1, images=images, eps=0.7)(ctx)
    rows = audit_layers(model.encoder, images, eps=0.7)
    want = {f"audit/l{i}/{k}": v for i, row in enumerate(rows, 1) for k, v in row.items()
            if k not in ("a0", "b0", "c0", "tau0")}
    assert got == pytest.approx(want, rel=1e-12)


def test_theorem1_terms_defaults_are_eps_one_half_1024_slices_seed_0():
    y = torch.randn(50, 6, dtype=torch.float64)
    assert theorem1_terms(y) == theorem1_terms(y, eps=0.5, num_slices=1024, seed=0, t_max=3.0, n_points=17)
    assert theorem1_terms(y)["rate_gap"] != theorem1_terms(y, eps=0.6)["rate_gap"]


# ----------------------------------------------------------------------------- the k-NN learning curve

def test_knn_monitor_split_is_the_probes_split_thinned_evenly_without_random_draws():
    from aot_lib.training.monitors import knn_monitor_split
    from aot_lib.training.probe import stratified_split

    labels = torch.arange(5).repeat_interleave(40)  # stored class by class, as an ImageFolder zip is
    state = torch.random.get_rng_state()
    bank, val = knn_monitor_split(labels, n_bank=50, n_val=10, val_fraction=0.25, seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)  # no global random number drawn
    probe_train, probe_val = stratified_split(labels, 0.25, seed=3)
    assert set(val.tolist()) <= set(probe_val.tolist()) and set(bank.tolist()) <= set(probe_train.tolist())
    assert len(bank) == 50 and len(val) == 10
    assert torch.bincount(labels[bank]).tolist() == [10] * 5  # evenly spaced over class-sorted indices
    assert torch.bincount(labels[val]).tolist() == [2] * 5
    everything = knn_monitor_split(labels, 10_000, 10_000, 0.25, 3)  # larger than the split: all of it
    assert torch.equal(everything[0], probe_train) and torch.equal(everything[1], probe_val)


def _knn_vote_reference(bank: np.ndarray, bank_y: np.ndarray, query: np.ndarray, k: int, t: float, classes: int):
    """DINO's weighted k-NN written out for one query at a time (float64, numpy)."""
    bank = bank / np.linalg.norm(bank, axis=1, keepdims=True)
    predictions = []
    for q in query / np.linalg.norm(query, axis=1, keepdims=True):
        sim = bank @ q
        nearest = np.argsort(-sim, kind="stable")[:k]
        votes = np.zeros(classes)
        for j in nearest:
            votes[bank_y[j]] += np.exp(sim[j] / t)
        predictions.append(int(np.argmax(votes)))
    return np.array(predictions)


def test_online_knn_scores_the_encoders_features_as_a_written_out_knn_and_leaves_the_model_as_found():
    from aot_lib.data.augment import prepare_images
    from aot_lib.training.monitors import OnlineKNN, StepContext

    model = _tiny_lejepa().float()  # float32, as in training: the monitor feeds float32 images
    g = torch.Generator().manual_seed(0)
    bank = torch.randint(0, 256, (12, 3, 16, 16), dtype=torch.uint8, generator=g)
    val = torch.randint(0, 256, (5, 3, 16, 16), dtype=torch.uint8, generator=g)
    bank_y, val_y = torch.arange(12) % 3, torch.tensor([0, 1, 2, 0, 1])
    mean, std = (0.4, 0.5, 0.6), (0.2, 0.25, 0.3)
    monitor = OnlineKNN(1, bank_images=bank, bank_labels=bank_y, val_images=val, val_labels=val_y, size=16,
                        mean=mean, std=std, k=4, temperature=0.5, batch_size=5)
    model.train()
    got = monitor(StepContext(step=1, out={}, model=model))
    assert model.training
    model.eval()
    with torch.no_grad():
        fb = model.encoder.forward_features(prepare_images(bank, 16, mean, std)).numpy()
        fv = model.encoder.forward_features(prepare_images(val, 16, mean, std)).numpy()
    predicted = _knn_vote_reference(fb.astype(np.float64), bank_y.numpy(), fv.astype(np.float64), 4, 0.5, 3)
    assert got == {"knn/val_top1": pytest.approx(float((predicted == val_y.numpy()).mean() * 100), abs=1e-9)}


def test_build_monitors_adds_the_knn_curve_only_when_asked_and_refuses_it_without_images():
    from aot_lib.training.monitors import OnlineKNN, build_monitors, RankMe

    mc = {"every": 3, "images": 4, "rankme": True, "theorem1": False, "audit": False, "eps": 0.5, "knn": True,
          "knn_bank": 10, "knn_val": 5}
    knn = dict(bank_images=torch.zeros(2, 3, 8, 8, dtype=torch.uint8), bank_labels=torch.tensor([0, 1]),
               val_images=torch.zeros(1, 3, 8, 8, dtype=torch.uint8), val_labels=torch.tensor([1]), size=8, k=1)
    built = build_monitors(mc, None, knn=knn)
    assert [type(m) for m in built] == [RankMe, OnlineKNN] and built[1].every == 3 and built[1].bank_images is knn["bank_images"]
    assert [type(m) for m in build_monitors({**mc, "knn": False}, None, knn=knn)] == [RankMe]
    with pytest.raises(ValueError, match=r"^monitor.knn needs labelled in-memory training images; set it to false for "
                                         r"data.name=stream$"):
        build_monitors(mc, None)


# ----------------------------------------------------------------------------- the audit's orthonormal bases

def test_orthonormal_bases_span_the_same_subspaces_and_make_the_rate_basis_free():
    from aot_lib.objectives.coding_rate import subspace_coding_rate
    from aot_lib.training.monitors import orthonormal_bases

    g = torch.Generator().manual_seed(0)
    U = torch.randn(3, 8, 2, dtype=torch.float64, generator=g)
    Q = orthonormal_bases(U)
    torch.testing.assert_close(Q.transpose(-1, -2) @ Q, torch.eye(2, dtype=torch.float64).expand(3, 2, 2), **F64)
    torch.testing.assert_close(Q @ Q.transpose(-1, -2), U @ torch.linalg.pinv(U), **F64)  # same projector
    mix = torch.randn(3, 2, 2, dtype=torch.float64, generator=g) + 3 * torch.eye(2, dtype=torch.float64)
    Z = torch.randn(8, 10, dtype=torch.float64, generator=g)
    # another basis of the same subspaces: the raw rate changes, the orthonormalised one does not
    assert not torch.allclose(subspace_coding_rate(Z, U), subspace_coding_rate(Z, U @ mix))
    torch.testing.assert_close(subspace_coding_rate(Z, orthonormal_bases(U)),
                               subspace_coding_rate(Z, orthonormal_bases(U @ mix)), **F64)


def test_audit_with_orthonormal_bases_changes_only_the_rates():
    from aot_lib.training.monitors import orthonormal_bases

    model = _tiny_lejepa()
    images = torch.randn(3, 3, 16, 16, dtype=torch.float64)
    raw = audit_layers(model.encoder, images)
    ortho = audit_layers(model.encoder, images, orthonormal=True)
    for block, r, o in zip(model.encoder.blocks, raw, ortho):
        assert {k: v for k, v in r.items() if not k.startswith("rc_")} == {k: v for k, v in o.items() if not k.startswith("rc_")}
        U = orthonormal_bases(block.mssa.subspaces())
        assert o["rc_in"] != r["rc_in"]
        with torch.no_grad():
            states = model.encoder.eval().forward_intermediates(images)
        i = list(model.encoder.blocks).index(block)
        from aot_lib.objectives.coding_rate import subspace_coding_rate
        z = states[i].z.double()
        z = z * torch.rsqrt(z.square().mean(-1, keepdim=True))
        assert o["rc_in"] == pytest.approx(float(subspace_coding_rate(z.transpose(-1, -2), U.detach()).mean()), rel=1e-12)


def test_patch_pca_matches_numpys_eigendecomposition_and_signs_the_border_low():
    torch.manual_seed(0)
    enc = create_model("crate_tiny", img_size=16, patch_size=4, embed_dim=16, num_heads=2, depth=2).double()
    x = torch.randn(5, 3, 16, 16, dtype=torch.float64)
    scores, explained = patch_pca(enc, x, n_components=3)
    with torch.no_grad():
        tokens = enc.forward_tokens(x)[:, 1:].reshape(-1, 16).numpy()  # 5 images x 16 patches
    centred = tokens - tokens.mean(0)
    evals, evecs = np.linalg.eigh(centred.T @ centred)  # ascending
    top = evecs[:, ::-1][:, :3]
    ref = (centred @ top).reshape(5, 16, 3)
    # the same components up to sign (a component's sign is the function's choice, checked next)
    for k in range(3):
        got = scores[..., k].numpy()
        assert min(np.abs(got - ref[..., k]).max(), np.abs(got + ref[..., k]).max()) < 1e-9
    assert explained.numpy() == pytest.approx(evals[::-1][:3] / evals.sum(), rel=1e-9)
    border = np.ones((4, 4), bool)
    border[1:-1, 1:-1] = False
    got = scores.numpy()
    assert (got[:, border.flatten()].mean((0, 1)) < got[:, ~border.flatten()].mean((0, 1))).all()
    vit = create_model("crate_tiny", img_size=12, patch_size=4, embed_dim=16, num_heads=2, depth=1)
    with pytest.raises(ValueError) as e:
        patch_pca(vit, torch.randn(1, 3, 12, 8))
    assert str(e.value) == "patch_pca needs a square grid of patches, got 6 patch tokens"
