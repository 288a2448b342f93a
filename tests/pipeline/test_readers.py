import pytest

from energyopt.core.instance import InstanceError
from energyopt.pipeline import instance_from_perseus_profile, read_perseus_profile

HEADER = "stage,instruction,frequency,time,energy\n"


def write(tmp_path, body, name="profile.csv"):
    p = tmp_path / name
    p.write_text(HEADER + body)
    return p


def test_reads_tables_fastest_first(tmp_path):
    p = write(tmp_path, "0,forward,1000,0.2,10\n0,forward,1400,0.1,12\n0,backward,1400,0.2,20\n")
    tables = read_perseus_profile(p)
    assert tables["s0/forward"].sm_clock_mhz == (1400, 1000)
    assert tables["s0/forward"].time_s == (0.1, 0.2)
    inst = instance_from_perseus_profile(p, 3, p_blocking_w=50.0)
    assert inst.num_computations == 6 and inst.num_stages == 1


@pytest.mark.parametrize(
    "body,match",
    [
        ("0,forward,1400,-0.1,12\n", r"line 2: time = -0.1"),
        ("0,forward,1400,abc,12\n", r"line 2: time = 'abc'"),
        ("0,sideways,1400,0.1,12\n", r"line 2: instruction = 'sideways'"),
        (
            "0,forward,1400,0.1,12\n0,forward,1400,0.1,12\n",
            r"frequency \[1400\] appears more than once",
        ),
        ("0,forward,1400,0.1,\n", r"line 2: energy = nan"),
    ],
)
def test_bad_rows_name_file_line_field_value(tmp_path, body, match):
    with pytest.raises(InstanceError, match=match) as err:
        read_perseus_profile(write(tmp_path, body))
    assert "profile.csv" in str(err.value)


def test_missing_column_and_missing_stage(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("stage,instruction,time,energy\n0,forward,0.1,1\n")
    with pytest.raises(InstanceError, match=r"missing column.*frequency"):
        read_perseus_profile(p)
    p = write(tmp_path, "0,forward,1400,0.1,12\n")
    with pytest.raises(InstanceError, match="stage 0 has no 'backward' rows"):
        instance_from_perseus_profile(p, 2, p_blocking_w=1.0)


def test_perseus_published_profile(perseus_profile):
    tables = read_perseus_profile(perseus_profile)
    assert len(tables) == 16
    assert all(len(t) == 38 for t in tables.values())
    assert max(tables["s0/forward"].sm_clock_mhz) == 1410


@pytest.mark.parametrize(
    "row, match",
    [
        ("inf,forward,1410,0.1,10.0", "stage = inf: must be an integer"),
        ("1e400,forward,1410,0.1,10.0", "stage = inf: must be an integer"),
        ("0,forward,1410.7,0.1,10.0", "frequency = 1410.7: must be an integer"),
        ("0,forward,true,0.1,10.0", "frequency"),
    ],
)
def test_perseus_reader_strict_integers(tmp_path, row, match):
    # Issue 13: inf / 1e400 raised OverflowError; fractional clocks were truncated.
    from energyopt.pipeline.readers import read_perseus_profile

    path = tmp_path / "p.csv"
    path.write_text("stage,instruction,frequency,time,energy\n" + row + "\n")
    with pytest.raises(InstanceError, match=match):
        read_perseus_profile(path)


def test_perseus_reader_names_a_few_columns_only(tmp_path):
    from energyopt.pipeline.readers import read_perseus_profile

    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(200)) + "\n" + "1," * 199 + "1\n")
    with pytest.raises(InstanceError) as exc:
        read_perseus_profile(path)
    msg = str(exc.value)
    assert "missing column(s) stage" in msg and "and 195 more" in msg and len(msg) < 300
    # A header wider than the readers' cap is refused before parsing, as briefly.
    path.write_text(",".join(f"c{i}" for i in range(5000)) + "\n" + "1," * 4999 + "1\n")
    with pytest.raises(InstanceError) as exc:
        read_perseus_profile(path)
    assert "5000 columns" in str(exc.value) and len(str(exc.value)) < 300


def test_blocking_power_presets(tmp_path):
    from energyopt.pipeline.readers import P_BLOCKING_W, blocking_power

    assert blocking_power("A100", None) == 83.64 == P_BLOCKING_W["a100"]
    assert blocking_power("a40", None) == 70.38
    assert blocking_power("a40", 50.0) == 50.0  # an explicit value wins
    with pytest.raises(InstanceError, match="no blocking-power preset"):
        blocking_power("h100", None)
