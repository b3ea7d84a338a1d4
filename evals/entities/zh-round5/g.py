import sys,re
pat=re.compile(sys.argv[1]); rng=sys.argv[2] if len(sys.argv)>2 else '1-60'; ctx=int(sys.argv[3]) if len(sys.argv)>3 else 50
a,b=map(int,rng.split('-'))
for c in range(a,b+1):
    lines=open(f'corpus/chapter-{c:03d}.txt',encoding='utf-8').read().split('\n')
    for i,l in enumerate(lines,1):
        ms=list(pat.finditer(l))
        if ms:
            m=ms[0]
            print(f'{c}:{i} [{len(ms)}x,{len(l)}c] {l[max(0,m.start()-ctx):m.end()+ctx]}')
