# Builds ../zh/questions-4.jsonl (round 4 of the zh set: English queries about the Chinese text,
# people named in Wade-Giles romanization as in the older translations, e.g. Joly 1892)
# from a hand-written (query, [(chapter, line), ...]) list. Answer lines were chosen by reading
# the paragraphs of ../zh/corpus/chapter-NNN.txt (line 1 = heading, each other line = one paragraph).
import json, os
BASE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(BASE, '..', 'zh', 'questions-4.jsonl')
Q = {
"member_of": [
 ("Jui-chu, the maid who dashed her head against a pillar and died when her mistress died - whose maid was she?", [(13,9)]),
 ("Ying-erh, whose real name is Huang Chin-ying and who plaits the nets - which young lady does she wait on?", [(35,16),(48,6)]),
 ("Ts'ai-hsia, the quiet maid Pao-yü calls an honest girl - in which lady's rooms does she serve?", [(39,3),(59,2)]),
 ("Chun-yen, old Mother Ho's daughter: which courtyard of the garden was she picked to serve in?", [(59,10)]),
 ("Hsia Shou-chung, the eunuch who came with the summons on Chia Cheng's birthday - what was his post in the palace?", [(16,4)]),
 ("the little maid Hsiao-lo whom Pao-chai sends to fetch Hsiang-yun - whose maid is she", [(52,7)]),
],
"co_member": [
 ("The evening Hsiao-hung got to pour Pao-yu his tea, where were all his other maids?", [(24,23)]),
 ("While the Dowager lady Chia was at court for the old Imperial Consort's mourning, who was lodging with Pao-chai, Li Wan and Ying-chun in the garden, and where did Aunt Hsueh move?", [(58,3)]),
 ("When Ch'in-shih died, which young clansmen did Chia Chen send along with Chia Ch'iang to receive the mourners?", [(13,8)]),
 ("which two maids were put on night duty in Pao-yu's room while Hsi-jen was at home with her dying mother", [(51,37)]),
 ("Pao-yu and Tai-yu walk through the snow to Li Wan's and all the girls are in scarlet felt capes - who are the exceptions?", [(49,18)]),
 ("Besides Ying-ch'un, who else got the Imperial Consort's lantern riddle wrong and went without a prize?", [(22,21)]),
],
"together": [
 ("Ping-erh finds a lock of hair in Chia Lien's pillowcase and covers for him in front of Hsi-feng", [(21,26),(21,27),(21,28)]),
 ("Pao-yü slips out with Ming-yen on Hsi-feng's birthday to burn incense by the well of the Shui-hsien nunnery", [(43,11),(43,13),(43,14)]),
 ("Hsi-feng and Yuan-yang play a trick on Liu Lao-lao at table with the heavy ivory chopsticks and the pigeon eggs", [(40,7),(40,8)]),
 ("Ching-wen carries two old handkerchiefs from Pao-yu to Tai-yu, who writes poems on them", [(34,8),(34,9),(34,10)]),
 ("Hsüeh Pao-ch'ai sits embroidering the stomacher beside the sleeping Pao-yü and hears him cry out against the gold-and-jade match", [(36,6),(36,8)]),
 ("Tan-chun takes Pao-yu aside under the pomegranate tree - the curios she wants, the shoes, and Aunt Chao's grumbling", [(27,16),(27,17)]),
],
"connection": [
 ("How did Chia Yu-tsun know the yamen doorkeeper who warned him about the Hsueh case, and what did Yu-tsun do with him afterwards?", [(4,5),(4,16)]),
 ("Chia Yün and Hsiao-hung: what is the business with her lost handkerchief?", [(26,2),(26,10)]),
 ("Ni Erh the Drunken Diamond and Chia Yun - how do they know each other, and was the loan paid back?", [(24,11),(24,22)]),
 ("Hsi-jen and Shih Hsiang-yün, how far back do they go?", [(32,2)]),
 ("what is going on between Chia Ch'iang and the actress Ling-kuan", [(36,11),(36,12)]),
 ("How is Liu Wu-erh connected to Fang-kuan, and why does Fang-kuan keep asking Pao-yu for rose dew?", [(60,20),(60,21)]),
],
"relation": [
 ("Who took Lin Tai-yu to Yangchow when Lin Ju-hai fell ill, and when did he die?", [(12,15),(14,15)]),
 ("who gave Hsi-jen her name and from which line of verse - Chia Cheng wanted to know", [(23,10),(3,28)]),
 ("Why were the maids' monthly wages late? What was Hsi-feng doing with the money, as Ping-erh tells Hsi-jen", [(39,4),(16,9)]),
 ("Whose clothes was Chin-ch'uan laid out in, since Tai-yu's birthday clothes would have been unlucky?", [(32,11),(32,12)]),
 ("Whose Dragon Boat Festival presents from Yüan-ch'un were exactly the same as Pao-yu's?", [(28,39),(28,40)]),
 ("Why did Chia She beat Chia Lien? Something about twenty old fans and Chia Yu-tsun", [(48,9)]),
],
}
with open(OUT, 'w', encoding='utf-8') as f:
    for fam, items in Q.items():
        for i, (q, rels) in enumerate(items, 1):
            o = {"id": f"zh4-{fam.replace('_','-')}-{i:03d}", "query": q,
                 "relevant": [{"path": f"chapter-{c:03d}.txt", "start_line": l, "end_line": l} for c, l in rels],
                 "tags": ["entity", "zh", "crosslingual", "wade-giles", fam], "split": "held_out-4"}
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
print('wrote', sum(len(v) for v in Q.values()), 'questions to', os.path.normpath(OUT))
