"""The numpy executor of the tile IR: analysis, interpreter, arithmetic, memory and collectives."""
