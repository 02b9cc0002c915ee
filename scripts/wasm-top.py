#!/usr/bin/env python3
"""What makes the browser bundle big: the code of each function in a wasm
module with its name section (the front end as cargo builds it, before
wasm-bindgen and wasm-opt strip the names), summed by crate, page module or
kind (serde deserializers apart: one is compiled per answer type and reader).
Standard library only; an equivalent of `twiggy top` grouped.

    python3 scripts/wasm-top.py target/front/wasm32-unknown-unknown/wasm-release/frontend.wasm
"""
import re,collections,sys
data=open(sys.argv[1],'rb').read()
def leb(b,i):
    r=0;s=0
    while True:
        x=b[i];i+=1;r|=(x&0x7f)<<s;s+=7
        if x<0x80:return r,i
i=8;imports=0;code=None;names={}
while i<len(data):
    sid=data[i];i+=1;size,i=leb(data,i);body=data[i:i+size]
    if sid==0:
        nl,j=leb(body,0);name=body[j:j+nl].decode()
        if name=='name':
            k=j+nl
            while k<len(body):
                sub=body[k];k+=1;sz,k=leb(body,k);sb=body[k:k+sz];k+=sz
                if sub==1:
                    n,m=leb(sb,0)
                    for _ in range(n):
                        idx,m=leb(sb,m);l,m=leb(sb,m);names[idx]=sb[m:m+l].decode('utf8','replace');m+=l
    if sid==2:
        n,j=leb(body,0)
        for _ in range(n):
            l,j=leb(body,j);j+=l;l,j=leb(body,j);j+=l;kind=body[j];j+=1
            if kind==0: _,j=leb(body,j);imports+=1
            elif kind==1: j+=1; fl=body[j];j+=1; _,j=leb(body,j)
            elif kind==2:
                fl=body[j];j+=1;_,j=leb(body,j)
                if fl&1:_,j=leb(body,j)
            elif kind==3: j+=2
    if sid==10: code=body
    i+=size
n,j=leb(code,0);sizes=[]
for f in range(n):
    sz,j2=leb(code,j);sizes.append((sz,names.get(imports+f,'?')));j=j2+sz
cat=collections.Counter()
def classify(nm):
    if 'serde_json' in nm and ('de..Deserializer' in nm or 'deserialize' in nm): return 'serde_json: a deserializer per answer type'
    if 'Deserialize' in nm or 'deserialize' in nm or 'Visitor' in nm: return 'serde: Deserialize impls'
    if 'Serialize' in nm or 'serialize' in nm: return 'serde: Serialize impls'
    m=re.search(r'3app5pages(\d+)',nm)
    if m:
        l=int(m.group(1));k=m.end();return 'app::pages::'+nm[k:k+l]
    for crate in ['tachys','reactive_graph','leptos_router','leptos_server','server_fn','leptos','runboard','gloo','web_sys','js_sys','wasm_bindgen','futures','alloc','core','std','hashbrown','dlmalloc','time','send_wrapper','app']:
        if re.search(str(len(crate))+re.escape(crate)+r'\d', nm): return crate
    return 'generic closures and impls (unattributed)'
for sz,nm in sizes: cat[classify(nm)]+=sz
tot=sum(s for s,_ in sizes)
print('code before wasm-opt:',tot,'bytes,',len(sizes),'functions')
for c,s in cat.most_common(16): print(f'{s:>9} {100*s/tot:5.1f}% {c}')
