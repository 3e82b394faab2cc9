#!/usr/bin/env bash
# Builds the real-server jars once (test/real/pom.xml: eureka-server, eureka-consumer, nacos2-server,
# nacos3-server, nacos-consumer).
# Skips Maven when every jar is newer than every source file and pom; the Maven cache
# (~/.m2) makes a rebuild fast. Exits non-zero, saying why, when java or mvn is missing.
set -euo pipefail
cd "$(dirname "$0")"
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "test/real: '$tool' is not on PATH; the real-server tests need a JDK 17+ and Maven (set LAMEDUCK_REAL=skip to skip them)" >&2
    exit 3
  fi
done
modules=(eureka-server eureka-consumer nacos2-server nacos3-server nacos-consumer)
stale=0
for m in "${modules[@]}"; do
  jar="$m/target/$m.jar"
  if [ ! -f "$jar" ] || [ -n "$(find "$m/src" "$m/pom.xml" pom.xml -newer "$jar" -print -quit)" ]; then stale=1; fi
done
if [ "$stale" = 0 ]; then
  echo "test/real: jars are up to date"
  exit 0
fi
start=$(date +%s)
mvn -q -B package -DskipTests
echo "test/real: built ${modules[*]} in $(( $(date +%s) - start )) s"
