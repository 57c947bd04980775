# Experiment only: lets PyPI's CUDA-built torchvision 0.28.0 import beside torch 2.13.0+cpu, without
# its C++ ops (_C.so needs libtorch_cuda and fails to load; torchvision then runs pure Python, but its
# _meta_registrations registers a fake kernel for torchvision::nms and ::qnms unconditionally, so the schemas are
# defined here first).
import importlib.abc
import sys

_keep = []


class _DefineNms(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torchvision":
            sys.meta_path.remove(self)
            import torch

            lib = torch.library.Library("torchvision", "FRAGMENT")
            for op in ("nms", "qnms"):
                lib.define(op + "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            _keep.append(lib)
        return None


sys.meta_path.insert(0, _DefineNms())
