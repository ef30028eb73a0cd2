#!/usr/bin/env bash
# The recorded runs behind the evidence chapters (issue 22), group by group, in the order they were launched.
# Each group is scripts/run_configs.sh over its configs (resumable: run the same group again after a stop; a
# finished run is not retrained). Run it from a clean clone of a clean commit, with AOT_DATA set, at low
# priority; a failed group is reported and the next one goes on.
#
#   nice -n 10 scripts/evidence_runs.sh seeds controls         # the groups named, in that order
#
# Groups:
#   sweeps    the equal learning-rate sweep: Tables 1/3 (AoT-ADMM, CRATE, AoT at 3 epochs on CIFAR-10) and
#             Table 2 (AoT-ADMM, CRATE pretrained on Imagenette), lr in {1e-3, 2e-3, 4e-3}, scored on
#             validation data only (probe.test=false); results/cpu/sweep/
#   seeds     Tables 1/3's seeds beside the recorded ones (lr 2e-3, every family's pick in the sweep): CIFAR-10
#             AoT-ADMM and CRATE seed 2, AoT seeds 1 and 2; CIFAR-100 AoT-ADMM and CRATE seed 1; each with the
#             online k-NN monitor. Then the recorded seeds 0/1 are probed again with today's probe protocol
#             (scripts/reprobe.py, into runs/reprobed/ so the checkout stays clean: copy them over by hand), so every seed of a cell is probed alike
#   table2    Table 2's pretrain -> fine-tune chain at each family's picked lr (AoT-ADMM 4e-3, CRATE as picked in
#             configs/cpu/table2/crate_imagenette.yaml), seeds 0 and 1, fine-tuned on CIFAR-10 and CIFAR-100
#   search    the 30-minute recipe search (issue 37; scripts/recipe_search.py says the rule): every candidate of
#             configs/cpu/search/ on AoT-ADMM, CRATE and AoT, candidate by candidate, validation scores only;
#             results/cpu/search/
#   search2   round 2 of the recipe search (issue 55; scripts/recipe_search2.py says the rule): every candidate of
#             configs/cpu/search2/ on AoT-ADMM, CRATE and AoT, validation scores only; results/cpu/search2/
#   finalists the search's two best candidates at full length on every family (configs/cpu/search/final/, written
#             by scripts/recipe_search.py finalists once the screening is recorded), validation scores only;
#             results/cpu/search/final/
#   finalists2  round 2's two best candidates at full length on every family (configs/cpu/search2/final/, written
#             by scripts/recipe_search2.py finalists once the screening is recorded and widened), validation scores
#             only; results/cpu/search2/final/
#   goal2     the round-2 goal: AoT-ADMM CIFAR-10 at the round-2 recipe (configs/cpu/cpu30b/, written by
#             scripts/recipe_search2.py recipe), seeds 0-4, on an idle machine; results/cpu/
#   bf16_check  bf16-mixed against fp32 at equal steps (issue 55; the plan's eighth addendum): round 2's base
#             screening run of AoT-ADMM, seeds 0 and 1, in each precision (configs/cpu/bf16_check/), validation
#             scores only; results/cpu/bf16_check/. Queued after goal2.
#   cpu30     Tables 1/3 at the 30-minute recipe (issue 37; configs/cpu/cpu30/, written by scripts/recipe_search.py
#             recipe once the finalists are recorded): AoT-ADMM, CRATE and AoT, seeds 0-4 on CIFAR-10 and 0-2 on
#             CIFAR-100, seed by seed, the test split read once per run by its probe; results/cpu/
#   whitebox  the white-box chapter's AoT encoder on Imagenette (Table 2's recipe; AoT-ADMM's and CRATE's are Table 2's
#             recorded runs); results/cpu/
#   baselines the probes' floor (issue 36): every Tables 1/3 config's encoder at its initialisation seed, and raw
#             pixels at each of those seeds, probed alike (aot baseline); results/cpu/baselines/
#   floors30  the 30-minute cells' floors (issue 55, post hoc; the plan's addendum): every cpu30 config's encoder at
#             its initialisation seed, and raw pixels at each seed, probed as the cells with the lr grid widened to
#             1e-4 .. 1e-1; results/cpu/baselines_cpu30/
#   cells30_edge  every 30-minute cell run whose wider-grid probe (results/cpu/probe_wide/) picked that grid's top,
#             probed again with the grid extended upward a rate at a time (probe.lr_above), plus one run whose pick was
#             inside, as a control of what the CPU alone moves; post hoc (the plan's third addendum); into
#             runs/probe_wide_edge/ (copy each probe.json to results/cpu/probe_wide_edge/<run>/ by hand)
#   cells10_edge  the same for the first recipe's (10-epoch) CIFAR-10 runs on their wider grid (1e-3 .. 3e-2),
#             extended from 1e-1 up; post hoc (the plan's fifth addendum); into runs/probe_wide_edge/ likewise
#   cells100_wide  the first recipe's CIFAR-100 runs (Table 1's CIFAR-100 row), not probed wider before, on cells10_edge's
#             grid and extension; post hoc (the plan's sixth addendum); into runs/probe_wide/ (copy each probe.json to
#             results/cpu/probe_wide/<run>/ by hand)
#   floors_wide  issue 36's floors (baselines) probed again on that wide grid, beside them; results/cpu/baselines_wide/
#   floors_wide_edge  every floors_wide floor whose pick sat at an end of the wide grid, probed again with the grid
#             extended outward on that side as floors30_edge does, plus one floor whose pick was inside, as a control;
#             post hoc (the plan's fourth addendum); results/cpu/baselines_wide_edge/
#   floors30_edge  every floors30 floor whose pick sat at an end of the wide grid, probed again with the grid extended
#             outward on that side a rate at a time (probe.lr_below / lr_above), plus one floor whose pick was inside,
#             which must come out the same; post hoc (the plan's second addendum); results/cpu/baselines_cpu30_edge/
#   floors2   round 2's floors at the round-2 probe (issue 55; the plan's round2 section): for every recorded
#             round-2 cell (results/cpu/cpu30b_*), its family's encoder untrained, and raw pixels at each seed of
#             each data set (with the AoT-ADMM cells), probed as the cells are; results/cpu/baselines_cpu30b/
#   controls  Table 2's from-scratch control (both families, CIFAR-10 and CIFAR-100, seeds 0 and 1) and
#             Table 4's chains with seeds 1 and 2 (LeJEPA ViT-T -> teacher -> distilled and labels-only students)
set -uo pipefail
cd "$(dirname "$0")/.."
run() { scripts/run_configs.sh "$@" || echo "== FAILED: scripts/run_configs.sh $*"; }
baseline_run_name() {  # KIND CONFIG: the run name aot baseline gives that floor
  ${PYTHON:-.venv/bin/python} -c "import sys; from aot_lib.training.baselines import baseline_name; from aot_lib.training.config import load_config; print(baseline_name(load_config(sys.argv[2]), sys.argv[1]))" "$1" "$2"
}
baseline() {  # KIND CONFIG [DIR [OVERRIDE...]]: probe the baseline into runs/DIR and record it in results/cpu/DIR/
  local py=${PYTHON:-.venv/bin/python} kind=$1 cfg=$2 dir=${3:-baselines} name
  shift 2; shift $(( $# > 0 ))  # what is left: overrides of the probe, the same for every seed of a floor
  name=$(baseline_run_name "$kind" "$cfg")
  if [ -f "results/cpu/$dir/$name/run.json" ]; then echo "== $kind $cfg: recorded in results/cpu/$dir/$name, skipped"; return; fi
  echo "== $kind $cfg -> runs/$dir/$name ($(date -u +%H:%M:%S))"
  { $py -m aot_lib.cli baseline "$kind" -c "$cfg" run.progress=false "run.out_dir=runs/$dir" "$@" \
      && $py -m aot_lib.cli record "runs/$dir/$name" "results/cpu/$dir/$name"; } || echo "== FAILED: baseline $kind $cfg"
}
# The floors' learning-rate grid when their probe is widened at both ends (the plan's addendum on the 30-minute
# cells' floors, results/cpu/plan.yaml: issue 36's floors picked their grid's bottom or top)
FLOOR_WIDE_LR='probe.lr=[0.0001,0.0003,0.001,0.003,0.01,0.03,0.1]'
# ... and outward from it, a rate at a time while the pick sits at that end (the plan's second addendum)
FLOOR_EDGE_LR=('probe.lr_below=[3e-5,1e-5,3e-6,1e-6]' 'probe.lr_above=[0.3,1.0,3.0,10.0]')
# the one floors30 floor whose pick was inside the wide grid that floors30_edge probes again: the same numbers
# must come back (the extension only acts at an end); if they do not, the book shows the edge records apart
FLOOR_EDGE_CONTROL=baseline_init_cpu30_aot_admm_cifar10
pick_at_edge() {  # FOLDER [top|bottom|either]: exit 0 if the pick of its probe.json sits at that end of the rates it
  # tried, 3 if not; anything else (no probe.json, a damaged one) is an error, which the callers report as FAILED
  ${PYTHON:-.venv/bin/python} -c "import json, sys; from aot_lib.probe_grid import grid_pick
p = grid_pick(json.load(open(sys.argv[1] + '/probe.json'))); end = sys.argv[2]
sys.exit(0 if (p['at_top'] and end != 'bottom') or (p['at_bottom'] and end != 'top') else 3)" "$1" "${2:-either}"
}
at_edge_or_report() {  # NAME FOLDER END: whether to probe NAME again (its pick at END); says why not, or FAILED
  pick_at_edge "$2" "$3"; local rc=$?
  case $rc in
    0) return 0 ;;
    3) echo "== $1: its pick is $([ "$3" = either ] && echo "inside its grid" || echo "not at the $3 of its grid"); not probed again" ;;
    *) echo "== FAILED: reading the pick of $2 (exit $rc)" ;;
  esac
  return 1
}
edge_floor() {  # KIND CONFIG [FIRST EDGE CONTROL]: probed again into EDGE if its record in FIRST sits at an edge
  local name first=${3:-baselines_cpu30} edge=${4:-baselines_cpu30_edge} control=${5:-$FLOOR_EDGE_CONTROL}
  name=$(baseline_run_name "$1" "$2") || { echo "== FAILED: the run name of $1 $2"; return; }
  if [ "$name" = "$control" ] || at_edge_or_report "$name" "results/cpu/$first/$name" either; then
    baseline "$1" "$2" "$edge" "$FLOOR_WIDE_LR" "${FLOOR_EDGE_LR[@]}"
  fi
}
# issue 36's floors as floors_wide probes them, and floors_wide_edge after it: untrained encoders, then raw pixels
FLOORS_WIDE_INIT=(configs/cpu/{aot_admm,crate,aot}_cifar10{,_seed1,_seed2}.yaml configs/cpu/{aot_admm,crate}_cifar100{,_seed1}.yaml)
FLOORS_WIDE_PIXELS=(configs/cpu/aot_admm_cifar10{,_seed1,_seed2}.yaml configs/cpu/aot_admm_cifar100{,_seed1}.yaml)
# the one floors_wide floor whose pick was inside that floors_wide_edge probes again (the plan's fourth addendum)
FLOOR_WIDE_EDGE_CONTROL=baseline_init_cpu_aot_admm_cifar10
# The 30-minute cells' wider grid (the plan's first addendum on them) and its extension upward (the third addendum)
CELL_WIDE_LR='probe.lr=[0.001,0.003,0.01,0.03,0.1]'
CELL_EDGE_LR='probe.lr_above=[0.3,1.0,3.0,10.0]'
CELL_EDGE_CONTROL=cpu30_aot_admm_cifar10_seed1  # its wider-grid pick was inside: what a probe moves on this CPU
# the first recipe's wider grid and its extension upward (the fifth addendum)
CELL10_WIDE_LR='probe.lr=[0.001,0.003,0.01,0.03]'
CELL10_EDGE_LR='probe.lr_above=[0.1,0.3,1.0,3.0,10.0]'
CELL10_EDGE_CONTROL=cpu_aot_admm_cifar10
edge_cell() {  # RUN [WIDE_LR EDGE_LR CONTROL]: its wider-grid probe extended upward into runs/probe_wide_edge/, if it picked the top
  local py=${PYTHON:-.venv/bin/python} name=$1 wide=${2:-$CELL_WIDE_LR} above=${3:-$CELL_EDGE_LR} control=${4:-$CELL_EDGE_CONTROL}
  if [ -f "results/cpu/probe_wide_edge/$name/probe.json" ] || [ -f "runs/probe_wide_edge/results/cpu/$name/probe.json" ]; then
    echo "== $name: probed on the extended grid already, skipped"; return
  fi
  # only the top: the extension goes upward (lr_above)
  if [ "$name" != "$control" ] && ! at_edge_or_report "$name" "results/cpu/probe_wide/$name" top; then return; fi
  echo "== $name -> runs/probe_wide_edge ($(date -u +%H:%M:%S))"
  $py scripts/reprobe.py --dest runs/probe_wide_edge --set "$wide" --set "$above" "results/cpu/$name" \
    || echo "== FAILED: reprobe $name"
}

for group in "$@"; do
  case $group in
    sweeps)
      run results/cpu/sweep configs/cpu/sweep/lr_*.yaml
      run results/cpu/sweep configs/cpu/table2/sweep/*.yaml ;;
    seeds)
      run results/cpu configs/cpu/aot_admm_cifar10_seed2.yaml configs/cpu/crate_cifar10_seed2.yaml \
        configs/cpu/aot_cifar10_seed1.yaml configs/cpu/aot_cifar10_seed2.yaml \
        configs/cpu/aot_admm_cifar100_seed1.yaml configs/cpu/crate_cifar100_seed1.yaml
      ${PYTHON:-.venv/bin/python} scripts/reprobe.py --dest runs/reprobed results/cpu/cpu_{aot_admm,crate}_cifar10{,_seed1} \
        results/cpu/cpu_aot_cifar10 results/cpu/cpu_{aot_admm,crate}_cifar100 || echo "== FAILED: reprobe" ;;
    table2)
      for fam in aot_admm crate; do
        run results/cpu configs/cpu/table2/${fam}_imagenette.yaml configs/cpu/table2/${fam}_imagenette_ft_cifar10.yaml \
          configs/cpu/table2/${fam}_imagenette_ft_cifar100.yaml configs/cpu/table2/${fam}_imagenette_seed1.yaml \
          configs/cpu/table2/${fam}_imagenette_ft_cifar10_seed1.yaml configs/cpu/table2/${fam}_imagenette_ft_cifar100_seed1.yaml
      done ;;
    search)
      for c in $(ls configs/cpu/search/*_aot_admm.yaml | sed 's/_aot_admm.yaml$//'); do
        run results/cpu/search "${c}_aot_admm.yaml" "${c}_crate.yaml" "${c}_aot.yaml"
      done ;;
    search2)
      # round 2 (issue 55; scripts/recipe_search2.py says the rule): candidate by candidate, every family
      for c in $(ls configs/cpu/search2/r*_aot_admm.yaml | sort -V | sed 's/_aot_admm.yaml$//'); do
        run results/cpu/search2 "${c}_aot_admm.yaml" "${c}_crate.yaml" "${c}_aot.yaml"
      done ;;
    finalists)
      for c in $(ls configs/cpu/search/final/*_aot_admm.yaml | sed 's/_aot_admm.yaml$//'); do
        run results/cpu/search/final "${c}_aot_admm.yaml" "${c}_crate.yaml" "${c}_aot.yaml"
      done ;;
    goal2)
      # the round-2 goal's runs (results/cpu/plan.yaml, round2.goal): AoT-ADMM on CIFAR-10 at the round-2 recipe,
      # seeds 0-4, one at a time on an idle machine (nothing else running: their wall time is the goal's clock)
      run results/cpu configs/cpu/cpu30b/cpu30b_aot_admm_cifar10{,_seed1,_seed2,_seed3,_seed4}.yaml ;;
    bf16_check)
      # seed by seed, fp32 then bf16-mixed, so that each recorded seed has its pair
      for s in 0 1; do
        run results/cpu/bf16_check configs/cpu/bf16_check/{fp32,bf16}_aot_admm_seed$s.yaml
      done ;;
    finalists2)
      for c in $(ls configs/cpu/search2/final/*_aot_admm.yaml | sed 's/_aot_admm.yaml$//'); do
        run results/cpu/search2/final "${c}_aot_admm.yaml" "${c}_crate.yaml" "${c}_aot.yaml"
      done ;;
    cpu30)
      # seed by seed, so that every seed recorded pairs the three families (the plan's cells need whole pairs)
      for s in 0 1 2 3 4; do
        sfx=$([ "$s" = 0 ] || echo "_seed$s")
        run results/cpu configs/cpu/cpu30/cpu30_{aot_admm,crate,aot}_cifar10$sfx.yaml
        if [ "$s" -le 2 ]; then run results/cpu configs/cpu/cpu30/cpu30_{aot_admm,crate,aot}_cifar100$sfx.yaml; fi
      done ;;
    whitebox)
      run results/cpu configs/cpu/whitebox/aot_imagenette.yaml ;;
    baselines)
      for cfg in configs/cpu/{aot_admm,crate,aot}_cifar10{,_seed1,_seed2}.yaml configs/cpu/{aot_admm,crate}_cifar100{,_seed1}.yaml; do
        baseline init "$cfg"
      done
      for cfg in configs/cpu/aot_admm_cifar10{,_seed1,_seed2}.yaml configs/cpu/aot_admm_cifar100{,_seed1}.yaml; do
        baseline pixels "$cfg"
      done ;;
    floors30)
      # the 30-minute cells' floors (issue 55, post hoc), seed by seed as the cells ran: each family's encoder
      # untrained, then raw pixels, at the cells' probe with the wide grid
      for data in cifar10 cifar100; do
        for s in 0 1 2 3 4; do
          if [ "$data" = cifar100 ] && [ "$s" -gt 2 ]; then continue; fi
          sfx=$([ "$s" = 0 ] || echo "_seed$s")
          for fam in aot_admm crate aot; do baseline init "configs/cpu/cpu30/cpu30_${fam}_${data}$sfx.yaml" baselines_cpu30 "$FLOOR_WIDE_LR"; done
          baseline pixels "configs/cpu/cpu30/cpu30_aot_admm_${data}$sfx.yaml" baselines_cpu30 "$FLOOR_WIDE_LR"
        done
      done ;;
    floors2)
      # the cells that ran (round 2's goal alone, unless its Tables 1/3 cells were run), in seed order
      for f in $(ls -d results/cpu/cpu30b_*/ | sort -V); do
        name=$(basename "$f")
        [ -f "$f/run.json" ] || continue
        baseline init "configs/cpu/cpu30b/$name.yaml" baselines_cpu30b
        case $name in cpu30b_aot_admm_*) baseline pixels "configs/cpu/cpu30b/$name.yaml" baselines_cpu30b ;; esac
      done ;;
    floors30_edge)
      for data in cifar10 cifar100; do
        for s in 0 1 2 3 4; do
          if [ "$data" = cifar100 ] && [ "$s" -gt 2 ]; then continue; fi
          sfx=$([ "$s" = 0 ] || echo "_seed$s")
          for fam in aot_admm crate aot; do edge_floor init "configs/cpu/cpu30/cpu30_${fam}_${data}$sfx.yaml"; done
          edge_floor pixels "configs/cpu/cpu30/cpu30_aot_admm_${data}$sfx.yaml"
        done
      done ;;
    cells30_edge)
      for f in results/cpu/probe_wide/cpu30_*/; do edge_cell "$(basename "$f")"; done ;;
    cells10_edge)
      for f in results/cpu/probe_wide/cpu_*cifar10/ results/cpu/probe_wide/cpu_*cifar10_seed*/; do
        edge_cell "$(basename "$f")" "$CELL10_WIDE_LR" "$CELL10_EDGE_LR" "$CELL10_EDGE_CONTROL"
      done ;;
    cells100_wide)
      # the first recipe's CIFAR-100 runs, not probed wider before: all four on cells10_edge's grid (the sixth addendum)
      for name in cpu_aot_admm_cifar100 cpu_aot_admm_cifar100_seed1 cpu_crate_cifar100 cpu_crate_cifar100_seed1; do
        if [ -f "results/cpu/probe_wide/$name/probe.json" ] || [ -f "runs/probe_wide/results/cpu/$name/probe.json" ]; then
          echo "== $name: probed on the wider grid already, skipped"; continue
        fi
        echo "== $name -> runs/probe_wide ($(date -u +%H:%M:%S))"
        ${PYTHON:-.venv/bin/python} scripts/reprobe.py --dest runs/probe_wide --set "$CELL10_WIDE_LR" \
          --set "$CELL10_EDGE_LR" "results/cpu/$name" || echo "== FAILED: reprobe $name"
      done ;;
    floors_wide_edge)
      # issue 36's floors on the wide grid that picked an end, extended there (post hoc), in floors_wide's order
      for cfg in "${FLOORS_WIDE_INIT[@]}"; do
        edge_floor init "$cfg" baselines_wide baselines_wide_edge "$FLOOR_WIDE_EDGE_CONTROL"
      done
      for cfg in "${FLOORS_WIDE_PIXELS[@]}"; do
        edge_floor pixels "$cfg" baselines_wide baselines_wide_edge "$FLOOR_WIDE_EDGE_CONTROL"
      done ;;
    floors_wide)
      # issue 36's floors (group baselines) probed again on the wide grid, written beside them (post hoc)
      for cfg in "${FLOORS_WIDE_INIT[@]}"; do baseline init "$cfg" baselines_wide "$FLOOR_WIDE_LR"; done
      for cfg in "${FLOORS_WIDE_PIXELS[@]}"; do baseline pixels "$cfg" baselines_wide "$FLOOR_WIDE_LR"; done ;;
    controls)
      run results/cpu configs/cpu/table2/*_scratch_*.yaml
      for s in 1 2; do
        run results/cpu configs/cpu/table4/vit_tiny_lejepa_seed$s.yaml configs/cpu/table4/vit_tiny_teacher_seed$s.yaml \
          configs/cpu/table4/vit_tiny_relu_kd_seed$s.yaml configs/cpu/table4/vit_tiny_relu_nokd_seed$s.yaml
      done ;;
    *) echo "unknown group $group (sweeps, seeds, table2, search, search2, finalists, finalists2, goal2, bf16_check, cpu30, whitebox, baselines, floors30, floors30_edge, cells30_edge, cells10_edge, cells100_wide, floors_wide, floors_wide_edge, controls)" >&2; exit 2 ;;
  esac
done
