"""The Gradio app. The only package that imports gradio; ``views`` and ``service`` do not."""
