import json, os, re, collections, sys
base='/tmp/entity-zh5'
FAMS=['member_of','co_member','together','connection','relation']
norm=lambda s: re.sub(r'[\s，。？！、,.?!：:；;“”"\'（）()]+','',s.strip().lower())
existing=[json.loads(l) for l in open(f'{base}/existing-questions.jsonl',encoding='utf-8') if l.strip()]
existing_n={norm(e['query']) for e in existing}
existing_refs={(r['path'],r['start_line']) for e in existing for r in e['relevant']}
errs=[]; warns=[]; ids=set(); cnt=collections.Counter(); queries=set()
files={}; only_chapter=collections.Counter()
for n,line in enumerate(open(f'{base}/questions-5.jsonl',encoding='utf-8'),1):
    try: o=json.loads(line)
    except Exception as e: errs.append(f'{n}: bad json {e}'); continue
    if set(o)!={'id','query','relevant','tags','split'}: errs.append(f'{n}: keys {set(o)}')
    if o.get('split')!='held_out-5': errs.append(f'{n}: split')
    t=o.get('tags')
    if not (isinstance(t,list) and len(t)==3 and t[0]=='entity' and t[1]=='zh' and t[2] in FAMS): errs.append(f'{n}: tags {t}'); continue
    fam=t[2]; cnt[fam]+=1
    if not re.fullmatch(rf"zh5-{fam.replace('_','-')}-\d{{3}}", o['id']): errs.append(f'{n}: id {o["id"]}')
    if o['id'] in ids: errs.append(f'{n}: dup id')
    ids.add(o['id'])
    q=o['query']
    if not isinstance(q,str) or not q.strip(): errs.append(f'{n}: empty query')
    if norm(q) in existing_n: errs.append(f'{n}: duplicates existing query')
    if norm(q) in queries: errs.append(f'{n}: duplicate query in file')
    queries.add(norm(q))
    r=o['relevant']
    if not (isinstance(r,list) and 1<=len(r)<=4): errs.append(f'{n}: relevant count')
    seen=set(); chs=set()
    for x in r:
        if set(x)!={'path','start_line','end_line'}: errs.append(f'{n}: rel keys'); continue
        p=f"{base}/corpus/{x['path']}"
        if not os.path.isfile(p): errs.append(f'{n}: missing {x["path"]}'); continue
        if p not in files: files[p]=open(p,encoding='utf-8').read().split('\n')
        s,e=x['start_line'],x['end_line']
        if not (isinstance(s,int) and isinstance(e,int) and s==e): errs.append(f'{n}: start!=end or not int')
        if not (2<=s<=len(files[p])): errs.append(f'{n}: line {s} out of range for {x["path"]}'); continue
        if not files[p][s-1].strip(): errs.append(f'{n}: empty line {x["path"]}:{s}')
        if (x['path'],s) in seen: errs.append(f'{n}: duplicate ref')
        if (x['path'],s) in existing_refs: warns.append(f'{o["id"]}: line {x["path"]}:{s} also used in an existing question')
        seen.add((x['path'],s)); chs.add(x['path'])
    # the query must not be copied from the text
    for p,ls in files.items():
        if len(q)>=8 and any(q in l for l in ls): errs.append(f'{n}: query copied from {p}')
    if len(chs)==1: only_chapter[next(iter(chs))]+=1
for c,k in only_chapter.items():
    if k>4: errs.append(f'{c}: {k} questions answered only in this chapter (>4)')
for f in FAMS:
    if cnt[f]!=12: errs.append(f'family {f}: {cnt[f]} != 12')
print('counts',dict(cnt)); print('chapters used',len({c for c in only_chapter}))
print(*warns, sep='\n')
print('ERRORS' if errs else 'OK', *errs, sep='\n')
sys.exit(1 if errs else 0)
