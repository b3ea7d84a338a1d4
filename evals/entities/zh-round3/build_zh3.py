# Builds questions-3.jsonl (round 3 of the zh set: English queries about the Chinese text)
# from a hand-written (query, [(chapter, line), ...]) list. Answer lines were chosen by reading
# the paragraphs of corpus/chapter-NNN.txt (line 1 = heading, each other line = one paragraph).
import json, os
BASE = os.path.dirname(os.path.abspath(__file__))
Q = {
"member_of": [
 ("Huo Qi, the servant who lost little Yinglian at the Lantern Festival - whose household did he work for?", [(1,30)]),
 ("Wu Jinxiao the farm bailiff who brings the New Year rents: does he run the Ningguo estates or the Rongguo ones?", [(53,9),(53,10)]),
 ("which family owns the Hengshu pawnshop where Xing Xiuyan pawned her winter clothes", [(57,21)]),
 ("Cuilü is whose maid?", [(31,9),(46,9)]),
 ("Zhan Guang and Shan Pinren, the literary hangers-on - whose household are they attached to", [(8,3)]),
 ("Jinchuan who drowned herself in the well was a maid in which lady's rooms", [(32,10)]),
],
"co_member": [
 ("Besides Mingyan, which of Baoyu's pages joined the brawl in the clan school?", [(9,8)]),
 ("who did Jia Zheng rely on to plan and build the Grand View Garden for the Imperial Consort's visit", [(16,20)]),
 ("Li Wan's widowed aunt came to the capital with her daughters Li Wen and Li Qi - who did they end up living with in the garden?", [(49,12)]),
 ("Lady Wang's maids standing on the veranda with Jinchuan when Baoyu was called in to see his father", [(23,8)]),
 ("Li Gui and the other menservants and pages who escorted Baoyu on his white horse", [(52,17)]),
 ("At Xiangyun's crab feast, which maids got a table of their own?", [(38,12),(38,13)]),
],
"together": [
 ("Baoyu and Baochai compare the inscriptions on his jade and her golden locket", [(8,14),(8,16)]),
 ("Jia Rong and Jia Qiang ambush Jia Rui in the dark passage", [(12,7),(12,8)]),
 ("scene where Jia Huan pushes the hot candle onto Baoyu's face", [(25,7)]),
 ("Shi Xiangyun and Baoyu roasting venison in the snow", [(49,20),(49,22),(49,23)]),
 ("Baoyu catches Mingyan with a girl in the little study of the Ningguo mansion", [(19,4),(19,5)]),
 ("Baoyu on the hillside overhears Lin Daiyu's flower-burial lament and breaks down", [(28,2)]),
],
"connection": [
 ("How is Li Gui related to Jia Baoyu?", [(9,4),(52,17)]),
 ("Jin Rong and Jia Huang's wife, what is the connection", [(9,10),(10,5)]),
 ("What was going on between Qin Zhong and the little nun Zhineng?", [(15,12),(16,6)]),
 ("why does Jia Yun offer to become Baoyu's adopted son", [(24,4),(24,5)]),
 ("Zhen Baoyu of the Zhen family in Nanking - how is he like our Baoyu?", [(56,11),(56,12)]),
 ("Lai Shangrong: how is he connected to Nanny Lai, and what did he become?", [(45,5),(45,6),(47,12)]),
],
"relation": [
 ("Who did the Zhen family maid Jiaoxing end up marrying?", [(2,5),(2,6)]),
 ("why was Baoyu's maid Qianxue sent away - the tea Nanny Li drank", [(8,27),(19,9)]),
 ("After Yuanyang refused him, which girl did Jia She buy as his concubine and for how much?", [(47,9)]),
 ("who gave Wang Xifeng's little daughter the name Qiaojie", [(42,4)]),
 ("Did Xue Pan actually make Xiangling his concubine?", [(16,8)]),
 ("Aunt Zhao slaps Fangguan over the jasmine powder Jia Huan was given instead of rose-nitre", [(60,8),(60,10)]),
],
}
with open(os.path.join(BASE, 'questions-3.jsonl'), 'w', encoding='utf-8') as f:
    for fam, items in Q.items():
        for i, (q, rels) in enumerate(items, 1):
            o = {"id": f"zh3-{fam.replace('_','-')}-{i:03d}", "query": q,
                 "relevant": [{"path": f"chapter-{c:03d}.txt", "start_line": l, "end_line": l} for c, l in rels],
                 "tags": ["entity", "zh", "crosslingual", fam], "split": "held_out-3"}
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
print('wrote', sum(len(v) for v in Q.values()), 'questions')
