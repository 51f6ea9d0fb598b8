"""Fixtures shared by every test package."""

import shutil

import pytest


@pytest.fixture(scope="module")
def ray_local():
    """A 2-CPU local Ray with a small object store, shut down (and its temp dir removed) after the module."""
    ray = pytest.importorskip("ray")
    from workers.ray_pipeline import init_local_ray

    if ray.is_initialized():
        ray.shutdown()
    temp_dir = init_local_ray(num_cpus=2, object_store_mb=256)
    yield ray
    ray.shutdown()
    shutil.rmtree(temp_dir, ignore_errors=True)
