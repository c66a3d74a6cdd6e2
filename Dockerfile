# rcabot: the Slack app. Configure with the variables in .env.example (docker run --env-file .env).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 RCABOT_DB=/var/lib/rcabot/rcabot.db
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot bot
COPY handlers handlers
COPY rca rca
COPY storage storage
RUN pip install --no-cache-dir . \
    && useradd --system --home /var/lib/rcabot --create-home rcabot
USER rcabot
VOLUME /var/lib/rcabot
EXPOSE 3000
HEALTHCHECK CMD python -c "import urllib.request,os; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\",\"3000\")}/healthz', timeout=3)"
CMD ["rcabot", "serve"]
