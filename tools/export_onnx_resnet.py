#!/usr/bin/env python3
"""Exports torchvision ResNet-18 to ONNX with PyTorch's own exporter, then strips the weight bytes.

The graph needs shapes and dtypes only: every initializer larger than --keep-elements elements keeps its
dims and data_type but loses its data, so the file stays a few tens of KB (the 45 MB of weights are not
needed by `fusion-cli import`) and can be committed as tests/data/onnx/resnet18.onnx.

    python3 tools/export_onnx_resnet.py -o resnet18.onnx        # needs torch, torchvision, onnx

BatchNormalization is kept as its own op (training=PRESERVE on a model in eval mode): the default EVAL
export folds it into the convolutions, and conv -> batchnorm -> relu is the fusion the graph should show.
The batch dimension is symbolic ("N"); import with --dim N=32.
"""
import argparse
import sys


def export(path, opset, batch):
    import torch
    import torchvision

    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(batch, 3, 224, 224)
    kwargs = dict(input_names=["x"], output_names=["logits"], opset_version=opset,
                  dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}},
                  training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kwargs)
        return "torch.onnx.export (TorchScript exporter)"
    except TypeError:  # a torch without the dynamo= keyword: the TorchScript exporter is the only one
        torch.onnx.export(model, (x,), path, **kwargs)
        return "torch.onnx.export"


def strip_weights(path, keep_elements):
    import onnx

    model = onnx.load(path)
    stripped = 0
    for t in model.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        if n > keep_elements:
            for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
                t.ClearField(field)
            stripped += 1
    model.doc_string = "torchvision resnet18, weights stripped by tools/export_onnx_resnet.py (shapes only)"
    onnx.save(model, path)
    return stripped, len(model.graph.initializer), len(model.graph.node)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--opset", type=int, default=17, help="17 is the newest opset Debian 12's libonnx knows")
    p.add_argument("--batch", type=int, default=2, help="example batch for tracing (the file keeps N symbolic)")
    p.add_argument("--keep-elements", type=int, default=64, help="initializers up to this size keep their data")
    args = p.parse_args(argv)
    how = export(args.output, args.opset, args.batch)
    stripped, total, nodes = strip_weights(args.output, args.keep_elements)
    import os
    print(f"{args.output}: {how}, opset {args.opset}, {nodes} nodes, {stripped} of {total} initializers stripped, "
          f"{os.path.getsize(args.output)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
