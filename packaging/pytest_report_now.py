"""A pytest plugin for the suite's runs on the GPU machine: prints each failure as it happens, so a
run stopped at the device call's time limit still shows why the tests before the stop failed."""


def pytest_runtest_logreport(report):
    if report.failed:
        print(f"\n--- FAILED NOW {report.nodeid} ({report.when}):\n{report.longreprtext[-6000:]}\n---", flush=True)
