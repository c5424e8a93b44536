"""Fusion Explorer's Python side: export a PyTorch model to the graph format (export), record what
torch.compile's Inductor fused and why not (inductor), and read and write the formats (graph_format).
Only export and inductor need torch; everything else is the standard library."""
__version__ = "0.1.0"
