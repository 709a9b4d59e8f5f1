r"""The CUDA image: ``mzattn-repro docker build|run`` (:mod:`.docker_driver`,
docker-py) and the image's entry point (:mod:`.container`)."""
