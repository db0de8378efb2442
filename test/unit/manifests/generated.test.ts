// manifests/ is rendered from the Helm chart, its one source (#94 item 4; scripts/render-manifests.mjs).
// Without helm: each generated file's header carries the digest of the chart's files with its
// target's arguments and the digest of its own body. A chart changed without rendering again, or
// a generated file edited by hand, fails here; the integration tier renders with helm and
// compares byte for byte.
import { mkdtempSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  chartDigest,
  readHeader,
  sha256,
  TARGETS,
  type Target,
} from '../../../scripts/render-manifests.mjs';

const targets = TARGETS;
const filesOf = (t: Target): string[] =>
  Object.keys(t.files ?? t.copy ?? {}).map((f) => join(t.dir, f));

describe('the manifests rendered from the chart', () => {
  it.each(targets.flatMap((t) => filesOf(t).map((f) => [f, t] as const)))(
    '%s is the render of the chart as it is now, unedited',
    (file, target) => {
      const text = readFileSync(file, 'utf8');
      const h = readHeader(text);
      expect(h, `${file} has no generated header`).toBeDefined();
      expect(
        h!.chart,
        `${file}: the chart changed since it was rendered (node scripts/render-manifests.mjs)`,
      ).toBe(chartDigest(target));
      expect(sha256(h!.rest), `${file} was edited by hand: edit the chart`).toBe(h!.body);
    },
  );

  it('every kustomization lists the files rendered beside it', () => {
    for (const t of targets.filter((x) => x.files)) {
      const k = readFileSync(join(t.dir, 'kustomization.yaml'), 'utf8');
      for (const f of Object.keys(t.files!))
        expect(k, `${t.dir}/kustomization.yaml`).toContain(`- ${f}`);
    }
  });

  it('the check can fail: an edited body, another target, a changed chart file each give another digest', () => {
    const file = filesOf(targets[0]!)[0]!;
    const h = readHeader(readFileSync(file, 'utf8'))!;
    expect(sha256(`${h.rest}# a hand edit\n`)).not.toBe(h.body);
    expect(chartDigest(targets[1]!)).not.toBe(chartDigest(targets[0]!));
    // The digest reads the chart's files: one byte more in values.yaml (in a copy) changes it.
    const copy = mkdtempSync(join(tmpdir(), 'chart-'));
    try {
      cpSync('charts/erdma-smcr', copy, { recursive: true });
      expect(chartDigest(targets[0]!, copy)).toBe(chartDigest(targets[0]!));
      writeFileSync(
        join(copy, 'values.yaml'),
        `${readFileSync(join(copy, 'values.yaml'), 'utf8')}\n`,
      );
      expect(chartDigest(targets[0]!, copy)).not.toBe(chartDigest(targets[0]!));
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
