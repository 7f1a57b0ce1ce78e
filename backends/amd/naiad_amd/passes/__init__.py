"""The AMD plugin's GPU-IR passes (see naiad_amd.plugin.naiad_lowering_passes)."""
