"""Hub Space widget for the `nli_diversity` metric (built by dialeval's shared UI helper)."""

from dialeval.ui import metric_widget

demo = metric_widget("nli_diversity")

if __name__ == "__main__":
    demo.launch()
