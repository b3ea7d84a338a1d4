#!/usr/bin/env python3
"""Build the entity-centric eval sets (en: The Three Musketeers, zh: 红楼梦).

Inputs (fetched bare git dirs):
  /work/.mirror/rdhyee+The-Three-Musketeers_1257/repo/.git  file 1257-0.txt   (Project Gutenberg #1257)
  /work/.mirror/tennessine+corpus/repo                      file 红楼梦.txt
  spec_en.py   graph written by hand from the text + questions
  spec_zh.py   graph transcribed from TheWiseWolfHolo/hongloumeng-graph src/data-people.js @7231780f (MIT)
               plus hand additions + questions (answers anchored by text snippets)

Run:  python build.py            (rewrites en/ and zh/ corpus, graph.jsonl, questions.jsonl)
"""
import json, os, random, re, subprocess, sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
EN_GIT = '/work/.mirror/rdhyee+The-Three-Musketeers_1257/repo/.git'
ZH_GIT = '/work/.mirror/tennessine+corpus/repo'
EN_CHAPTERS = 50
ZH_CHAPTERS = 60
SEED = 20240601


def git_show(gitdir, path):
    return subprocess.run(['git', '--git-dir', gitdir, 'show', 'HEAD:' + path],
                          check=True, capture_output=True).stdout.decode('utf-8-sig')


def write_corpus(outdir, chapters):
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        os.remove(os.path.join(outdir, f))
    for i, lines in enumerate(chapters, 1):
        with open(os.path.join(outdir, 'chapter-%03d.txt' % i), 'w', encoding='utf-8', newline='\n') as fh:
            fh.write('\n'.join(lines) + '\n')


def build_en_corpus():
    t = git_show(EN_GIT, '1257-0.txt').replace('\r\n', '\n')
    body = t[t.index('\n1 THE THREE PRESENTS OF D'):]
    body = body[:body.index('*** END OF')]
    starts = [m.start() for m in re.finditer(r'(?m)^(\d+) [A-Z"]', body)]
    # keep only chapter headings numbered 1..67 in order
    heads, want = [], 1
    for s in starts:
        n = int(re.match(r'\n?(\d+)', body[s:]).group(1))
        if n == want:
            heads.append(s); want += 1
    chapters = []
    for k in range(EN_CHAPTERS):
        chunk = body[heads[k]:heads[k + 1]]
        paras = [re.sub(r'\s+', ' ', p).strip() for p in re.split(r'\n\s*\n', chunk)]
        chapters.append([p for p in paras if p])
    return chapters


def build_zh_corpus():
    t = git_show(ZH_GIT, '红楼梦.txt').replace('\r\n', '\n')
    parts = re.split(r'(?m)^(?=第[一二三四五六七八九十零〇百]+回)', t)[1:]
    chapters = []
    for p in parts[:ZH_CHAPTERS]:
        lines = [l.strip(' \t\u3000') for l in p.split('\n')]
        lines = [re.sub(r'\s+', ' ', l) if i == 0 else l for i, l in enumerate(lines)]
        chapters.append([l for l in lines if l])
    return chapters


def load_corpus(outdir):
    docs = {}
    for f in sorted(os.listdir(outdir)):
        with open(os.path.join(outdir, f), encoding='utf-8') as fh:
            docs[f] = fh.read().split('\n')[:-1]
    return docs


def count_in(docs, s, cjk):
    n = 0
    if cjk:
        for lines in docs.values():
            for l in lines:
                n += l.count(s)
    else:
        pat = re.compile(r'(?<![A-Za-z])' + re.escape(s) + r'(?![A-Za-z])')
        for lines in docs.values():
            for l in lines:
                n += len(pat.findall(l))
    return n


def resolve(docs, path, anchor):
    """Return the 1-based line number of the unique line in `path` containing `anchor`."""
    lines = docs[path]
    hits = [i + 1 for i, l in enumerate(lines) if anchor in l]
    if len(hits) != 1:
        raise SystemExit('anchor %r in %s matched %d lines' % (anchor, path, len(hits)))
    return hits[0]


def finish(lang, docs, nodes, edges, questions, cjk):
    # keep nodes that occur in the shipped text; drop aliases that never occur
    kept = {}
    for n in nodes:
        forms = [n['name']] + list(n.get('aliases', []))
        present = [f for f in forms if count_in(docs, f, cjk) > 0]
        if not present:
            continue
        n = dict(n)
        if n['name'] not in present:  # source name not used in this text: promote the commonest surface form
            best = max(present, key=lambda f: count_in(docs, f, cjk))
            n['properties'] = dict(n.get('properties', {}), source_name=n['name'])
            n['name'] = best
        n['aliases'] = [a for a in n.get('aliases', []) if a in present and a != n['name']]
        kept[n['id']] = n
    edges = [e for e in edges if e['source'] in kept and e['target'] in kept]
    seen, uniq = set(), []
    for e in edges:
        k = (e['source'], e['relation'], e['target'])
        if k in seen:
            continue
        seen.add(k); uniq.append(e)
    outdir = os.path.join(HERE, lang)
    with open(os.path.join(outdir, 'graph.jsonl'), 'w', encoding='utf-8', newline='\n') as fh:
        for n in kept.values():
            fh.write(json.dumps(n, ensure_ascii=False) + '\n')
        for e in uniq:
            fh.write(json.dumps(e, ensure_ascii=False) + '\n')
    rng = random.Random(SEED)
    out = []
    for q in questions:
        rel = []
        for path, a1, *rest in q['spans']:
            s = resolve(docs, path, a1)
            e = resolve(docs, path, rest[0]) if rest else s
            assert e >= s, (q['id'], path, a1)
            rel.append({'path': path, 'start_line': s, 'end_line': e})
        assert 1 <= len(rel) <= 5, q['id']
        out.append({'id': q['id'], 'query': q['query'], 'relevant': rel,
                    'tags': ['entity', lang, q['family']]})
    idx = list(range(len(out)))
    rng.shuffle(idx)
    held = set(idx[:round(len(out) / 3)])
    with open(os.path.join(outdir, 'questions.jsonl'), 'w', encoding='utf-8', newline='\n') as fh:
        for i, q in enumerate(out):
            q['split'] = 'held_out' if i in held else 'tune'
            fh.write(json.dumps(q, ensure_ascii=False) + '\n')
    fam = Counter(q['tags'][2] for q in out)
    print(lang, 'files', len(docs), 'nodes', len(kept), 'edges', len(uniq), 'questions', len(out),
          'held_out', len(held), dict(fam))


def main():
    write_corpus(os.path.join(HERE, 'en', 'corpus'), build_en_corpus())
    write_corpus(os.path.join(HERE, 'zh', 'corpus'), build_zh_corpus())
    if '--corpus-only' in sys.argv:
        return
    import spec_en, spec_zh
    en_docs = load_corpus(os.path.join(HERE, 'en', 'corpus'))
    nodes, edges = spec_en.graph()
    finish('en', en_docs, nodes, edges, spec_en.QUESTIONS, cjk=False)
    zh_docs = load_corpus(os.path.join(HERE, 'zh', 'corpus'))
    nodes, edges = spec_zh.graph()
    finish('zh', zh_docs, nodes, edges, spec_zh.QUESTIONS, cjk=True)


if __name__ == '__main__':
    main()
