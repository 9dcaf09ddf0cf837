"""Hub Space widget for the `ent_n` metric (built by dialeval's shared UI helper)."""

from dialeval.ui import metric_widget

demo = metric_widget("ent_n")

if __name__ == "__main__":
    demo.launch()
