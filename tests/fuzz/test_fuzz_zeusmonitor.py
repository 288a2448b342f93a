"""Generated hostile variants of a ZeusMonitor JIT log through the reader and the selectors.

Each variant is refused with one line naming the file (and the column or the line where a
cell is bad), or accepted; never another exception.
"""

from __future__ import annotations

import random

from fuzzutil import check_message, csv_text, mutate_csv

from energyopt.core.errors import InstanceError
from energyopt.tuning.powerlimit import power_limit_choice

MUTATIONS = 60
ENERGY = tuple(f"gpu{i}_energy" for i in range(4))
HEADER = ["start_time", "window_name", "elapsed_time", *ENERGY]
_NOT_NUMBER = ["inf", "-inf", "1e400", "nan", "True", "x", "-1"]
INVALID = {
    "start_time": _NOT_NUMBER,
    "elapsed_time": [*_NOT_NUMBER, "0"],
    "gpu0_energy": _NOT_NUMBER,
    "gpu3_energy": _NOT_NUMBER,
    "window_name": [
        "__GlobalPowerLimitOptimizer_x",
        "__GlobalPowerLimitOptimizer_2.5",
        "__GlobalPowerLimitOptimizer_0",
        "__GlobalPowerLimitOptimizer_-5",
        "__GlobalPowerLimitOptimizer_99999999",
    ],
}


def rows() -> list[list]:
    out = []
    for k, watts in enumerate(range(300, 99, -25)):
        t = 8.0 + 0.1 * k
        out.append(
            [
                1000.0 + 10 * k,
                f"__GlobalPowerLimitOptimizer_{watts}",
                t,
                *(900.0 + i for i in range(4)),
            ]
        )
    return out


def test_zeus_monitor_log_mutations(tmp_path):
    rng = random.Random("zeusmonitor")
    path = tmp_path / "H100+model+gpu0,1,2,3.csv"
    path.write_text(csv_text(HEADER, rows()))
    assert power_limit_choice(path, "time") == 300  # the unmutated file is read
    for k in range(MUTATIONS):
        # any one energy column may go: ZeusMonitor's GPU indices need not start at 0
        label, text, must_refuse = mutate_csv(HEADER, rows(), INVALID, rng, optional=ENERGY)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        selector = ["energy", "time", "zeus-cost:0.5", "max-slowdown:1.1"][k % 4]
        try:
            power_limit_choice(path, selector)
        except InstanceError as exc:
            check_message(str(exc), str(path), set(HEADER) | {"line"}, label)
            continue
        assert not must_refuse, f"{label}: accepted"
