"""The HIP side: driver wrapper and launcher."""
