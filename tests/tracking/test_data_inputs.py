"""Every trial's run lists the data it used (rem.tracking.data_inputs): its training, validation and test splits as
MLflow dataset inputs, each named, sourced and digested from the verified md5s so that equal digests mean equal
images; the logged model's test accuracy names the test split; and MLflow's own run and model pages show them to
a reader (a real browser, tests/browser.py)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from rem.config import Config
from rem.tracking.data_inputs import log_data_inputs, lost_an_insert_race, split_digest
from rem.tracking.store import open_client
from tests.conftest import SYNTHETIC

CHECKSUMS = {"train-images-idx3-ubyte": "a" * 32, "t10k-images-idx3-ubyte": "b" * 32}


def logged_run(tmp_path, data):
    """A run of a fresh sqlite store with the splits of `data` logged as its inputs: (client, uri, run)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = open_client(uri)
    run = client.create_run(client.create_experiment("data"), run_name="capsnet·data·s42")
    log_data_inputs(client, run.info.run_id, data, CHECKSUMS, tmp_path / "raw" / SYNTHETIC)
    return client, uri, client.get_run(run.info.run_id)


def test_a_run_lists_its_three_splits_with_their_source_context_and_digest(tmp_path):
    data = Config().with_overrides({"data.dataset": SYNTHETIC}).data
    client, _, run = logged_run(tmp_path, data)
    inputs = {i.dataset.name: i for i in run.inputs.dataset_inputs}
    assert set(inputs) == {f"{SYNTHETIC}/train", f"{SYNTHETIC}/validation", f"{SYNTHETIC}/test"}
    contexts = {name: {t.key: t.value for t in i.tags}["mlflow.data.context"] for name, i in inputs.items()}
    assert contexts == {f"{SYNTHETIC}/train": "training", f"{SYNTHETIC}/validation": "validation",
                        f"{SYNTHETIC}/test": "test"}
    assert all(str(tmp_path / "raw" / SYNTHETIC) in i.dataset.source for i in inputs.values())
    assert len({i.dataset.digest for i in inputs.values()}) == 3
    # a retried trial logs them again: still three
    log_data_inputs(client, run.info.run_id, data, CHECKSUMS, tmp_path / "raw" / SYNTHETIC)
    assert len(client.get_run(run.info.run_id).inputs.dataset_inputs) == 3


def test_trials_logging_one_dataset_at_once_all_list_it_against_a_real_mlflow_server(tmp_path, mlflow_service):
    # Trials of a sweep start together and share their data. MLflow looks a dataset up and then inserts it, so all
    # but one of them used to fail on the datasets table's unique key (6 threads at once: 9 rounds of 10 failed).
    client = open_client(mlflow_service)
    experiment = client.create_experiment("data inputs at once")
    folder = tmp_path / "raw" / SYNTHETIC
    for seed in range(4):  # each round a new dataset, so each round races for its insert
        data = Config().with_overrides({"data.dataset": SYNTHETIC, "data.split_seed": seed}).data
        runs = [client.create_run(experiment).info.run_id for _ in range(6)]
        together, errors = threading.Barrier(len(runs)), []

        def log(run_id):
            together.wait()
            try:
                log_data_inputs(client, run_id, data, CHECKSUMS, folder)
            except Exception as err:  # collected: an exception in a thread would not fail the test
                errors.append(err)

        threads = [threading.Thread(target=log, args=(run_id,)) for run_id in runs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        listed = [sorted((i.dataset.name, i.dataset.digest) for i in client.get_run(r).inputs.dataset_inputs)
                  for r in runs]
        assert len(listed[0]) == 3 and all(names == listed[0] for names in listed), listed


def test_an_input_mlflow_refuses_for_another_reason_fails_at_once(tmp_path):
    from mlflow.exceptions import MlflowException

    data = Config().with_overrides({"data.dataset": SYNTHETIC}).data
    client, _, run = logged_run(tmp_path, data)
    client.delete_run(run.info.run_id)
    with pytest.raises(MlflowException) as refused:
        log_data_inputs(client, run.info.run_id, data, CHECKSUMS, tmp_path / "raw" / SYNTHETIC)
    assert "active" in str(refused.value) and not lost_an_insert_race(refused.value)


def test_a_digest_changes_exactly_when_its_splits_images_could():
    data = Config().with_overrides({"data.dataset": SYNTHETIC}).data
    held_out = Config().with_overrides({"data.dataset": SYNTHETIC, "data.val_size": 1000}).data
    train, val, test = (("val_size", "split_seed", "train_subset"), ("val_size", "split_seed", "val_subset"),
                        ("test_subset",))
    assert split_digest(CHECKSUMS, data, train) != split_digest(CHECKSUMS, held_out, train)
    assert split_digest(CHECKSUMS, data, val) != split_digest(CHECKSUMS, held_out, val)
    assert split_digest(CHECKSUMS, data, test) == split_digest(CHECKSUMS, held_out, test)
    other_bytes = {**CHECKSUMS, "t10k-images-idx3-ubyte": "c" * 32}
    assert split_digest(CHECKSUMS, data, test) != split_digest(other_bytes, data, test)
    with pytest.raises(ValueError, match=rf"^data.dataset {SYNTHETIC}: expected verified files to digest, found none$"):
        split_digest({}, data, test)


@pytest.mark.slow  # MLflow's UI takes 15-60 s to start on a busy 2-core CPU (measured)
def test_the_run_page_and_the_model_page_show_the_datasets_in_a_browser(tmp_path):
    from rem.tracking.ui import server_env, stop_group, wait_until_serving
    from tests.browser import browser_page, screenshot
    from tests.sweep_helpers import free_port

    data = Config().with_overrides({"data.dataset": SYNTHETIC}).data
    client, uri, run = logged_run(tmp_path, data)
    model_id = with_a_logged_model(client, run)
    test = next(i.dataset for i in run.inputs.dataset_inputs if i.dataset.name.endswith("/test"))
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host",
                               "127.0.0.1", "--port", str(port), "--workers", "1"], env=server_env(),
                              start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_until_serving(base, server, timeout=180), "mlflow ui did not answer"
        with browser_page() as page:
            page.goto(f"{base}/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}")
            page.get_by_text(f"{SYNTHETIC}/train").first.wait_for(timeout=90_000)
            page.get_by_text("+2", exact=True).first.click()  # the page lists one dataset, the others on a click
            page.get_by_text(f"{SYNTHETIC}/test").first.wait_for(timeout=10_000)
            screenshot(page, "mlflow_run_datasets")
            text = page.inner_text("body")
            page.goto(f"{base}/#/experiments/{run.info.experiment_id}/models/{model_id}")
            page.get_by_text("Datasets used").first.wait_for(timeout=60_000)
            screenshot(page, "mlflow_model_datasets")
            model_page = page.inner_text("body")
    finally:
        stop_group(server)
    for logged in run.inputs.dataset_inputs:  # each split with its digest and its context, as the page shows them
        context = {tag.key: tag.value for tag in logged.tags}["mlflow.data.context"]
        assert f"{logged.dataset.name} ({logged.dataset.digest})\n{context.capitalize()}" in text, logged.dataset.name
    # the model's page: its final test accuracy beside the split it was measured on, and that split as used
    assert f"Datasets used\n{test.name} (#{test.digest})" in model_page, model_page[-2000:]


def with_a_logged_model(client, run) -> str:
    """The run's logged model with the run's final test accuracy linked to it, as a finished trial's; its id."""
    from rem.tracking.mlflow_model import MODEL_METRICS, link_final_metrics

    client.log_metric(run.info.run_id, MODEL_METRICS[0], 0.75, step=2)
    model = client.create_logged_model(run.info.experiment_id, source_run_id=run.info.run_id, name="model")
    link_final_metrics(client, run.info.run_id, model.model_id, step=2)
    return model.model_id


def test_the_logged_models_metrics_name_the_test_split_they_were_measured_on(tmp_path):
    data = Config().with_overrides({"data.dataset": SYNTHETIC}).data
    client, _, run = logged_run(tmp_path, data)
    (metric,) = client.get_logged_model(with_a_logged_model(client, run)).metrics
    test = next(i.dataset for i in run.inputs.dataset_inputs if i.dataset.name.endswith("/test"))
    assert (metric.key, metric.value, metric.dataset_name, metric.dataset_digest) == (
        "final/test/acc", 0.75, test.name, test.digest)
