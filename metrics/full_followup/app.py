"""Hub Space widget for the `full_followup` metric (built by dialeval's shared UI helper)."""

from dialeval.ui import metric_widget

demo = metric_widget("full_followup")

if __name__ == "__main__":
    demo.launch()
