"""Chinese set: 红楼梦 chapters 1-60 (text: tennessine/corpus 红楼梦.txt).
Graph: people + kinship/service/friendship edges transcribed from TheWiseWolfHolo/hongloumeng-graph
(src/data-people.js @ 7231780f, MIT): node id, group, title; edge 甲, 乙, type, 称谓 label.
Added by hand from the text: aliases, house/organisation nodes, MEMBER_OF edges, places, a few edges."""

GROUPS = {'rong': ('rongguo', '荣国府'), 'ning': ('ningguo', '宁国府'), 'shi': ('shi_family', '史家'),
          'wang': ('wang_family', '王家'), 'xue': ('xue_family', '薛家'), 'lin': ('lin_family', '林家')}

# [id, group, title]  (transcribed; WW "scale o" objects 通灵宝玉/金锁 omitted)
WW_NODES = [
 ('绛珠仙草','myth','西方灵河岸三生石畔'),('神瑛侍者','myth','赤瑕宫侍者'),('警幻仙子','myth','太虚幻境之主'),
 ('茫茫大士','myth','癞头和尚'),('渺渺真人','myth','跛足道人'),
 ('贾源','rong','荣国公'),('贾代善','rong','袭荣国公'),('贾母','rong','史太君 · 荣国府老祖宗'),('贾赦','rong','荣国府长房 · 袭一等将军'),
 ('邢夫人','rong','贾赦继室'),('贾政','rong','荣国府二房 · 工部员外郎'),('王夫人','rong','贾政正室'),('赵姨娘','rong','贾政之妾 · 探春、贾环之母'),
 ('周姨娘','rong','贾政之妾'),('贾珠','rong','贾政长子'),('贾元春','rong','贾政长女 · 贤德妃'),('贾宝玉','rong','怡红公子 · 神瑛侍者转世'),
 ('贾探春','rong','贾政庶女 · 蕉下客'),('贾环','rong','贾政庶子'),('贾迎春','rong','贾赦之女 · 二木头'),('贾琏','rong','贾赦之子 · 凤姐之夫'),
 ('王熙凤','rong','凤辣子 · 琏二奶奶'),('平儿','rong','凤姐陪嫁丫鬟 · 贾琏之妾'),('巧姐','rong','贾琏与凤姐之女'),('李纨','rong','贾珠之妻 · 稻香老农'),
 ('贾兰','rong','贾珠与李纨之子'),('袭人','rong','宝玉大丫鬟'),('晴雯','rong','宝玉丫鬟 · 病补雀金裘'),('麝月','rong','宝玉大丫鬟'),
 ('秋纹','rong','宝玉房中二等丫鬟'),('芳官','rong','小戏子'),('小红','rong','红玉'),('鸳鸯','rong','贾母首席大丫鬟'),('琥珀','rong','贾母房中丫鬟'),
 ('傻大姐','rong','贾母房中粗使丫头'),('金钏儿','rong','王夫人大丫鬟'),('玉钏儿','rong','王夫人丫鬟'),('周瑞家的','rong','王夫人陪房'),
 ('王善保家的','rong','邢夫人陪房'),('司棋','rong','迎春大丫鬟'),('侍书','rong','探春丫鬟'),('秋桐','rong','贾赦所赐'),('赖嬷嬷','rong','贾母老仆'),
 ('赖大','rong','荣府大管家'),('林之孝','rong','荣府总管'),('来旺','rong','凤姐陪房'),('兴儿','rong','贾琏小厮'),('贾代儒','rong','族学塾师'),
 ('贾瑞','rong','贾代儒之孙'),('贾芸','rong','荣府远房侄子'),
 ('贾演','ning','宁国公'),('贾代化','ning','袭宁国公'),('贾敬','ning','贾珍之父'),('贾珍','ning','宁国府族长'),('尤氏','ning','贾珍继室'),
 ('贾蓉','ning','贾珍之子 · 秦可卿之夫'),('秦可卿','ning','秦氏 · 小名可儿'),('贾惜春','ning','贾敬之女 · 藕榭'),('入画','ning','惜春丫鬟'),
 ('贾蔷','ning','宁府远房子弟'),('焦大','ning','宁府老仆'),
 ('史湘云','shi','枕霞旧友 · 贾母侄孙女'),('史鼐','shi','保龄侯'),('史鼎','shi','忠靖侯'),('翠缕','shi','湘云丫鬟'),
 ('王子腾','wang','京营节度使 · 九省统制'),('王仁','wang','凤姐之兄'),
 ('薛姨妈','xue','王夫人之妹'),('薛蟠','xue','呆霸王'),('薛宝钗','xue','蘅芜君 · 薛姨妈之女'),('薛蝌','xue','薛蟠堂弟'),('薛宝琴','xue','薛蝌之妹'),
 ('夏金桂','xue','薛蟠之妻'),('宝蟾','xue','金桂陪嫁丫鬟'),('香菱','xue','甄英莲 · 薛蟠之妾'),('莺儿','xue','宝钗丫鬟'),
 ('林黛玉','lin','潇湘妃子 · 绛珠仙草转世'),('林如海','lin','扬州巡盐御史'),('贾敏','lin','贾母之女'),('紫鹃','lin','黛玉丫鬟'),('雪雁','lin','黛玉丫鬟'),
 ('邢岫烟','oth','邢夫人之侄女'),('尤老娘','oth','尤氏继母'),('尤二姐','oth','贾琏之二房'),('尤三姐','oth','鸳鸯剑主'),('秦业','oth','营缮郎'),
 ('秦钟','oth','字鲸卿'),('潘又安','oth','司棋表弟'),
 ('刘姥姥','out','乡下老妇'),('板儿','out','刘姥姥外孙'),('王狗儿','out','刘姥姥女婿'),('冷子兴','out','古董商'),('贾雨村','out','大司马'),
 ('甄士隐','out','姑苏乡宦'),('娇杏','out','甄家丫鬟'),('甄宝玉','out','江南甄家公子'),('北静王水溶','out','北静郡王'),('忠顺亲王','out','忠顺王府'),
 ('蒋玉菡','out','艺名琪官'),('柳湘莲','out','冷二郎'),('张道士','out','荣国公替身'),('智能儿','out','水月庵小尼'),('龄官','out','小戏子'),
 ('妙玉','out','槛外人 · 栊翠庵'),('孙绍祖','out','中山狼'),('卫若兰','out','史湘云之夫（批语）'),
]
# [甲, 乙, type, 称谓]  (transcribed; edges touching the omitted objects left out)
WW_EDGES = [l.split() for l in """
贾演 贾源 b 兄弟|贾演 贾代化 b 父/子|贾代化 贾敬 b 父/子|贾敬 贾珍 b 父/子|贾敬 贾惜春 b 父/女|贾珍 贾惜春 b 兄/妹|贾珍 贾蓉 b 父/子
贾珍 尤氏 m 夫/妻|贾蓉 秦可卿 m 夫/妻|贾珍 秦可卿 ri 翁媳|贾珍 焦大 sv 主/仆|焦大 贾蓉 ri 仆/主|贾惜春 入画 sv 主/仆|贾惜春 尤氏 in 小姑/嫂
贾珍 贾蔷 in 族兄/族弟|贾蔷 龄官 lv 情缘|贾源 贾代善 b 父/子|贾代善 贾母 m 夫/妻|贾代善 贾赦 b 父/子|贾代善 贾政 b 父/子|贾代善 贾敏 b 父/女
贾母 贾赦 b 母/子|贾母 贾政 b 母/子|贾母 贾敏 b 母/女|贾赦 贾政 b 兄弟|贾赦 邢夫人 m 夫/妻|贾赦 贾琏 b 父/子|贾赦 贾迎春 b 父/女
贾政 王夫人 m 夫/妻|贾政 赵姨娘 m 夫/妾|贾政 周姨娘 m 夫/妾|贾政 贾珠 b 父/子|贾政 贾元春 b 父/女|贾政 贾宝玉 b 父/子|贾政 贾探春 b 父/女
贾政 贾环 b 父/子|王夫人 贾珠 b 母/子|王夫人 贾元春 b 母/女|王夫人 贾宝玉 b 母/子|王夫人 贾探春 in 嫡母/庶女|王夫人 贾环 in 嫡母/庶子
赵姨娘 贾探春 b 母/女|赵姨娘 贾环 b 母/子|贾元春 贾宝玉 b 姊/弟|贾宝玉 贾环 ri 兄/弟|贾探春 贾环 b 姊/弟|贾珠 李纨 m 夫/妻|贾珠 贾兰 b 父/子
李纨 贾兰 b 母/子|贾琏 王熙凤 m 夫/妻|贾琏 平儿 m 夫/妾|贾琏 秋桐 m 夫/妾|贾琏 尤二姐 m 夫/二房|贾琏 巧姐 b 父/女|王熙凤 巧姐 b 母/女
贾琏 贾迎春 b 兄/妹|邢夫人 贾琏 in 继母/继子|邢夫人 贾迎春 in 嫡母/庶女|邢夫人 王熙凤 ri 婆婆/儿媳|贾母 王熙凤 in 太婆婆/孙媳妇
贾母 王夫人 in 婆婆/儿媳|贾母 邢夫人 in 婆婆/儿媳|贾母 李纨 in 太婆婆/孙媳妇|王夫人 李纨 in 婆婆/儿媳|贾母 贾宝玉 b 祖母/孙
贾母 林黛玉 b 外祖母/外孙女|贾母 史湘云 b 祖姑母/侄孙女|贾母 鸳鸯 sv 主/仆|贾母 琥珀 sv 主/仆|贾母 傻大姐 sv 主/仆|贾母 赖嬷嬷 sv 主/仆
赖嬷嬷 赖大 b 母/子|贾琏 林之孝 sv 主/仆|贾赦 鸳鸯 ri 逼娶不成|贾赦 秋桐 sv 主/仆|贾赦 孙绍祖 ri 债务|孙绍祖 贾迎春 m 夫/妻|贾赦 邢岫烟 in 姑父/侄女
王夫人 王熙凤 b 姑母/内侄女|王子腾 王熙凤 b 叔父/侄女|王夫人 王子腾 b 妹/兄|王熙凤 王仁 b 妹/兄|王熙凤 平儿 sv 主/仆|王熙凤 小红 sv 主/仆
王熙凤 来旺 sv 主/仆|贾琏 兴儿 sv 主/仆|王熙凤 尤二姐 ri 正室/二房|王熙凤 贾瑞 ri 设局|王熙凤 赵姨娘 ri 结怨|王熙凤 秦可卿 fr 婶/侄媳
王熙凤 贾探春 fr 嫂/小姑|王熙凤 李纨 in 妯娌|王熙凤 贾芸 fr 婶/侄|贾琏 贾芸 in 族叔/侄|贾芸 贾宝玉 fr 认作父子|贾芸 小红 lv 情缘|贾瑞 贾代儒 b 孙/祖
王夫人 薛姨妈 b 姐妹|薛姨妈 薛蟠 b 母/子|薛姨妈 薛宝钗 b 母/女|薛蟠 薛宝钗 b 兄/妹|薛蟠 薛蝌 b 堂兄/堂弟|薛蝌 薛宝琴 b 兄/妹|薛宝钗 薛宝琴 b 堂姐/堂妹
薛蝌 邢岫烟 m 夫/妻|邢夫人 邢岫烟 b 姑母/侄女|王夫人 薛宝钗 b 姨母/外甥女|薛姨妈 贾宝玉 b 姨母/外甥|薛蟠 夏金桂 m 夫/妻|薛蟠 香菱 m 夫/妾
夏金桂 香菱 ri 妻妾|夏金桂 宝蟾 sv 主/仆|薛宝钗 莺儿 sv 主/仆|薛蟠 柳湘莲 ri 误会|薛宝钗 史湘云 fr 闺中好友|薛姨妈 林黛玉 fr 义母/义女
林如海 贾敏 m 夫/妻|林如海 林黛玉 b 父/女|贾敏 林黛玉 b 母/女|贾宝玉 贾敏 b 侄/姑母|林黛玉 紫鹃 sv 主/仆|林黛玉 雪雁 sv 主/仆
史湘云 史鼐 b 侄女/叔父|史湘云 史鼎 b 侄女/叔父|史鼐 史鼎 b 兄弟|史湘云 翠缕 sv 主/仆|史湘云 卫若兰 m 妻/夫
贾宝玉 林黛玉 lv 表兄/表妹|贾宝玉 薛宝钗 m 夫/妻|林黛玉 薛宝钗 fr 金兰契|贾宝玉 史湘云 fr 表兄/表妹|林黛玉 史湘云 fr 诗友|贾宝玉 袭人 sv 主/仆
贾宝玉 晴雯 sv 主/仆|贾宝玉 麝月 sv 主/仆|贾宝玉 秋纹 sv 主/仆|贾宝玉 芳官 sv 主/仆|贾宝玉 小红 sv 主/仆|贾宝玉 金钏儿 fr 玩笑|王夫人 金钏儿 sv 主/仆
王夫人 玉钏儿 sv 主/仆|王夫人 周瑞家的 sv 主/仆|王夫人 晴雯 ri 嫌恶|王善保家的 晴雯 ri 进谗|邢夫人 王善保家的 sv 主/仆|王善保家的 司棋 b 外祖母/外孙女
贾迎春 司棋 sv 主/仆|司棋 潘又安 lv 情缘|贾探春 侍书 sv 主/仆|贾探春 李纨 fr 共同理家|贾探春 薛宝钗 fr 共同理家|贾宝玉 妙玉 fr 槛内人/槛外人
妙玉 贾母 fr 奉茶|妙玉 贾惜春 fr 棋友|贾宝玉 秦钟 fr 同窗知己|贾宝玉 蒋玉菡 fr 知己|贾宝玉 柳湘莲 fr 知己|贾宝玉 北静王水溶 fr 忘年之交
贾宝玉 张道士 fr 忘年之交|贾宝玉 甄宝玉 my 镜像|贾母 张道士 fr 故交|贾宝玉 龄官 fr 偶遇|袭人 蒋玉菡 m 妻/夫|忠顺亲王 蒋玉菡 sv 主/仆
忠顺亲王 贾政 ri 索人|柳湘莲 尤三姐 lv 情缘|柳湘莲 贾琏 fr 定亲介绍|柳湘莲 渺渺真人 my 度化|尤老娘 尤氏 in 继母/继女|尤老娘 尤二姐 b 母/女
尤老娘 尤三姐 b 母/女|尤二姐 尤三姐 b 姐妹|尤氏 尤二姐 in 继姐/继妹|贾珍 尤二姐 in 姐夫/小姨子|贾珍 尤三姐 in 姐夫/小姨子|秦业 秦可卿 in 养父/养女
秦业 秦钟 b 父/子|秦可卿 秦钟 in 养姐/弟|秦钟 智能儿 lv 情缘|秦可卿 警幻仙子 my 同名|刘姥姥 板儿 b 外祖母/外孙|刘姥姥 王狗儿 in 岳母/女婿
王狗儿 板儿 b 父/子|周瑞家的 刘姥姥 fr 引荐|刘姥姥 王熙凤 fr 联宗亲戚|刘姥姥 贾母 fr 老亲家|刘姥姥 巧姐 fr 恩人|巧姐 板儿 lv 伏笔姻缘
周瑞家的 冷子兴 in 岳母/女婿|冷子兴 贾雨村 fr 旧识|贾雨村 甄士隐 fr 赠银赴考|甄士隐 香菱 b 父/女|甄士隐 娇杏 sv 主/仆|娇杏 贾雨村 m 妻/夫
贾雨村 林黛玉 fr 师/生|贾雨村 贾政 fr 同宗|贾雨村 王子腾 fr 提携|贾雨村 薛蟠 fr 葫芦案|甄士隐 渺渺真人 my 度化|傻大姐 林黛玉 ri 失言
林黛玉 薛宝琴 fr 义姐妹|林黛玉 香菱 fr 师/生|神瑛侍者 绛珠仙草 my 灌溉之恩|神瑛侍者 贾宝玉 my 前身/转世|绛珠仙草 林黛玉 my 前身/转世
茫茫大士 渺渺真人 fr 同行|茫茫大士 薛宝钗 my 赠方|警幻仙子 贾宝玉 my 引梦|茫茫大士 贾宝玉 my 度化
""".replace('\n', '|').split('|') if l.strip()]

ALIASES = {
 '贾母': ['老太太', '史太君', '老祖宗', '史老太君', '史老夫人'], '贾宝玉': ['宝玉', '宝二爷', '怡红公子', '绛洞花主', '富贵闲人'],
 '林黛玉': ['黛玉', '颦儿', '林妹妹', '林姑娘', '潇湘妃子'], '薛宝钗': ['宝钗', '宝姑娘', '宝姐姐', '蘅芜君'],
 '王熙凤': ['凤姐', '凤姐儿', '熙凤', '凤丫头', '琏二奶奶', '凤辣子', '凤哥'], '贾琏': ['琏二爷', '琏爷'], '贾政': ['政老爹', '存周'],
 '贾赦': ['赦老爹', '恩侯'], '贾珍': ['珍爷', '珍大爷'], '贾元春': ['元春', '元妃', '贤德妃'], '贾探春': ['探春', '三姑娘', '蕉下客', '秋爽居士'],
 '贾迎春': ['迎春', '二姑娘', '菱洲'], '贾惜春': ['惜春', '四姑娘', '藕榭'], '史湘云': ['湘云', '云丫头', '枕霞旧友'], '李纨': ['李氏', '稻香老农', '宫裁'],
 '秦可卿': ['秦氏', '可卿', '可儿', '蓉大奶奶'], '秦业': ['秦邦业'], '袭人': ['花袭人'], '紫鹃': ['鹦哥'], '小红': ['红玉', '林红玉'],
 '香菱': ['英莲', '甄英莲'], '薛蟠': ['呆霸王', '文起', '薛大爷'], '贾雨村': ['雨村', '贾化', '时飞'], '甄士隐': ['士隐', '甄费'], '冷子兴': ['子兴'],
 '王狗儿': ['狗儿'], '北静王水溶': ['北静王', '水溶', '北静郡王'], '忠顺亲王': ['忠顺王爷', '忠顺亲王府', '忠顺府'], '蒋玉菡': ['琪官'],
 '柳湘莲': ['湘莲', '冷二郎'], '贾代儒': ['代儒'], '贾环': ['环儿'], '贾兰': ['兰哥儿'], '巧姐': ['巧姐儿', '大姐儿'],
 '茫茫大士': ['癞头和尚', '癞僧'], '渺渺真人': ['跛足道人', '跛道人'], '警幻仙子': ['警幻'], '绛珠仙草': ['绛珠草', '绛珠仙子'],
 '林如海': ['如海'], '金钏儿': ['金钏'], '玉钏儿': ['玉钏'], '来旺': ['旺儿'], '贾瑞': ['贾天祥', '瑞大爷'], '智能儿': ['智能'],
 '邢岫烟': ['岫烟'], '薛宝琴': ['宝琴'], '妙玉': ['槛外人'], '尤氏': ['尤大奶奶'], '王子腾': [], '平儿': [], '鸳鸯': [],
}

SLUG = {}
def slug(name):
    if name not in SLUG:
        SLUG[name] = 'p%03d' % (len(SLUG) + 1)
    return SLUG[name]

EXTRA_NODES = [  # id, type, name, aliases, props
 ('jia_clan', 'organization', '贾府', ['贾家', '宁荣二府'], {'kind': '家族'}),
 ('rongguo', 'organization', '荣国府', ['荣府'], {'kind': '家族支派 / 府第'}),
 ('ningguo', 'organization', '宁国府', ['宁府'], {'kind': '家族支派 / 府第'}),
 ('shi_family', 'organization', '史家', ['史侯家'], {'kind': '家族', 'hint': '保龄侯、忠靖侯'}),
 ('wang_family', 'organization', '王家', [], {'kind': '家族'}),
 ('xue_family', 'organization', '薛家', [], {'kind': '家族', 'hint': '皇商'}),
 ('lin_family', 'organization', '林家', [], {'kind': '家族'}),
 ('zhen_family', 'organization', '甄家', ['甄府'], {'kind': '家族'}),
 ('haitang_she', 'organization', '海棠社', ['海棠诗社'], {'kind': '诗社'}),
 ('jiazhu_school', 'organization', '家塾', ['义学'], {'kind': '贾氏族学'}),
 ('daguanyuan', 'location', '大观园', [], {}), ('yihong', 'location', '怡红院', [], {}), ('xiaoxiang', 'location', '潇湘馆', [], {}),
 ('hengwu', 'location', '蘅芜苑', ['蘅芜院'], {}), ('daoxiang', 'location', '稻香村', [], {}), ('qiushuang', 'location', '秋爽斋', [], {}),
 ('longcui', 'location', '栊翠庵', [], {}), ('lixiang', 'location', '梨香院', [], {}), ('jinling', 'location', '金陵', ['石头城'], {}),
 ('gusu', 'location', '姑苏', [], {}), ('yangzhou', 'location', '扬州', ['维扬'], {}), ('taixu', 'location', '太虚幻境', [], {}),
 ('hulu_temple', 'location', '葫芦庙', [], {}), ('tiekan', 'location', '铁槛寺', [], {}), ('shuiyue', 'location', '水月庵', ['馒头庵'], {}),
 ('qingxu', 'location', '清虚观', [], {}), ('capital', 'location', '都中', ['京都', '神京'], {}), ('qinggeng', 'location', '青埂峰', [], {}),
 ('fengsu', 'character', '封肃', [], {'title': '甄士隐岳丈'}),
 ('feng_shi', 'character', '封氏', [], {'title': '甄士隐之妻'}),
 ('fengyuan', 'character', '冯渊', [], {'title': '被薛蟠打死的小乡宦之子'}),
 ('event_xingqin', 'event', '元妃省亲', ['省亲'], {'chapter': 18}),
 ('event_hulu_case', 'event', '葫芦案', ['葫芦僧乱判葫芦案'], {'chapter': 4}),
 ('event_beating', 'event', '宝玉挨打', ['不肖种种大承笞挞'], {'chapter': 33}),
]

LABELS = {'b': 'FAMILY_OF', 'in': 'FAMILY_OF', 'm': 'PARTNER_OF', 'lv': 'PARTNER_OF', 'fr': 'FRIEND_OF', 'ri': 'ENEMY_OF', 'my': 'MYTHIC_BOND_WITH'}

def graph(_unused=None):
    nodes, edges = [], []
    for name, grp, title in WW_NODES:
        props = {'title': title, 'source_group': grp}
        nodes.append({'id': slug(name), 'type': 'character', 'name': name, 'aliases': ALIASES.get(name, []), 'properties': props})
        if grp in GROUPS:
            edges.append({'source': slug(name), 'relation': 'MEMBER_OF', 'target': GROUPS[grp][0], 'properties': {'role': title, 'origin': 'source group'}})
    for id, t, name, al, props in EXTRA_NODES:
        nodes.append({'id': id, 'type': t, 'name': name, 'aliases': al, 'properties': props})
    for a, b, t, label in WW_EDGES:
        p = {'label': label, 'source_type': t}
        if t == 'sv':  # 主/仆 -> servant SERVES master
            edges.append({'source': slug(b), 'relation': 'SERVES', 'target': slug(a), 'properties': {'role': '仆', 'label': label}})
            continue
        if t in ('b', 'in'):
            p['kind'] = label.split('/')[0]
            if t == 'in': p['category'] = '姻亲族亲'
        if t in ('m', 'lv'):
            p['type'] = {'m': '婚配', 'lv': '情缘'}[t]
        if t == 'fr':
            p['strength'] = 0.6
        if t == 'ri':
            p['reason'] = label; p['resolved'] = False
        edges.append({'source': slug(a), 'relation': LABELS[t], 'target': slug(b), 'properties': p})
    S = slug
    def E(a, r, b, **p): edges.append({'source': a, 'relation': r, 'target': b, 'properties': p})
    # hand-added from the text
    E('rongguo', 'MEMBER_OF', 'jia_clan', role='支派'); E('ningguo', 'MEMBER_OF', 'jia_clan', role='支派')
    E(S('贾源'), 'LEADER_OF', 'rongguo', role='荣国公'); E(S('贾演'), 'LEADER_OF', 'ningguo', role='宁国公'); E(S('贾珍'), 'LEADER_OF', 'ningguo', role='族长')
    E(S('王熙凤'), 'MEMBER_OF', 'wang_family', role='王夫人之内侄女'); E(S('王夫人'), 'MEMBER_OF', 'wang_family', role='王子腾之妹')
    E(S('薛姨妈'), 'MEMBER_OF', 'wang_family', role='王子腾之妹'); E(S('贾母'), 'MEMBER_OF', 'shi_family', role='史侯家的小姐')
    E(S('贾敏'), 'MEMBER_OF', 'rongguo', role='赦、政二公之胞妹'); E(S('贾惜春'), 'LOCATED_IN', 'rongguo', context='跟在祖母这边读书')
    E(S('甄士隐'), 'MEMBER_OF', 'zhen_family', role='乡宦'); E(S('甄宝玉'), 'MEMBER_OF', 'zhen_family', role='公子'); E(S('香菱'), 'MEMBER_OF', 'zhen_family', role='甄士隐之女英莲')
    E(S('娇杏'), 'SERVES', 'zhen_family', role='丫鬟')
    E('fengsu', 'FAMILY_OF', S('甄士隐'), kind='岳丈'); E('feng_shi', 'PARTNER_OF', S('甄士隐'), type='嫡妻'); E('fengsu', 'FAMILY_OF', 'feng_shi', kind='父')
    E(S('薛蟠'), 'ENEMY_OF', 'fengyuan', reason='争买英莲，打死冯渊', resolved=False)
    E(S('李纨'), 'LEADER_OF', 'haitang_she', role='社长')
    for n in ['李纨', '贾宝玉', '林黛玉', '薛宝钗', '贾探春', '贾迎春', '贾惜春', '史湘云']:
        E(S(n), 'MEMBER_OF', 'haitang_she', role='社员')
    E(S('贾代儒'), 'LEADER_OF', 'jiazhu_school', role='塾师')
    for n in ['贾宝玉', '秦钟', '贾瑞', '贾蔷']:
        E(S(n), 'MEMBER_OF', 'jiazhu_school', role='学生')
    for n, loc in [('贾宝玉', 'yihong'), ('林黛玉', 'xiaoxiang'), ('薛宝钗', 'hengwu'), ('李纨', 'daoxiang'), ('贾探春', 'qiushuang'), ('妙玉', 'longcui'),
                   ('薛姨妈', 'lixiang'), ('林如海', 'yangzhou'), ('甄士隐', 'gusu'), ('警幻仙子', 'taixu'), ('智能儿', 'shuiyue'), ('张道士', 'qingxu'),
                   ('贾雨村', 'hulu_temple')]:
        E(S(n), 'LOCATED_IN', loc)
    for loc in ['yihong', 'xiaoxiang', 'hengwu', 'daoxiang', 'qiushuang', 'longcui']:
        E(loc, 'LOCATED_IN', 'daguanyuan')
    E('daguanyuan', 'LOCATED_IN', 'capital'); E('lixiang', 'LOCATED_IN', 'capital'); E('hulu_temple', 'LOCATED_IN', 'gusu')
    E('rongguo', 'LOCATED_IN', 'capital'); E('ningguo', 'LOCATED_IN', 'capital'); E('jia_clan', 'LOCATED_IN', 'jinling', context='原籍老宅')
    E('lin_family', 'LOCATED_IN', 'gusu', context='本贯'); E('xue_family', 'LOCATED_IN', 'jinling', context='原籍'); E('zhen_family', 'LOCATED_IN', 'jinling')
    E('jia_clan', 'FAMILY_OF', 'shi_family', kind='联络有亲'); E('jia_clan', 'FAMILY_OF', 'wang_family', kind='联络有亲'); E('jia_clan', 'FAMILY_OF', 'xue_family', kind='联络有亲')
    E('wang_family', 'FAMILY_OF', 'xue_family', kind='姻亲'); E('jia_clan', 'FRIEND_OF', 'zhen_family', strength=0.8, note='老亲、世交')
    for n in ['贾元春', '贾政', '王夫人', '贾母', '贾宝玉', '林黛玉', '薛宝钗', '贾探春', '贾迎春', '贾惜春', '李纨']:
        E(S(n), 'PARTICIPATED_IN', 'event_xingqin')
    for n in ['贾雨村', '薛蟠', '香菱']:
        E(S(n), 'PARTICIPATED_IN', 'event_hulu_case')
    E('fengyuan', 'PARTICIPATED_IN', 'event_hulu_case'); E('event_hulu_case', 'LOCATED_IN', 'jinling')
    for n in ['贾政', '贾宝玉', '贾环', '忠顺亲王', '王夫人', '贾母']:
        E(S(n), 'PARTICIPATED_IN', 'event_beating')
    E(S('贾宝玉'), 'LOCATED_IN', 'taixu', context='梦游'); E(S('绛珠仙草'), 'LOCATED_IN', 'taixu', context='灵河岸'); E(S('茫茫大士'), 'LOCATED_IN', 'qinggeng')
    E(S('秦可卿'), 'LOCATED_IN', 'tiekan', context='停灵'); E(S('王熙凤'), 'LOCATED_IN', 'shuiyue', context='弄权铁槛寺时歇在馒头庵')
    return nodes, edges

c = lambda n: 'chapter-%03d.txt' % n
Q = []
def q(family, query, *spans, lang='zh'):
    Q.append({'id': 'zh-%s-%03d' % (family.replace('_', '-'), 1 + sum(1 for x in Q if x['family'] == family)),
              'family': family, 'query': query, 'spans': list(spans), 'lang': lang})

# member_of
q('member_of', '林黛玉是哪家的女儿？', (c(2), '乳名黛玉，年方五岁'))
q('member_of', '贾珍是宁国府还是荣国府的人', (c(2), '把宁国府竟翻了过来'))
q('member_of', '王熙凤娘家是哪一家？', (c(3), '学名王熙凤'), (c(6), '就是太太的内侄女，当日大舅老爷的女儿'))
q('member_of', '薛蟠出身哪个家族', (c(4), '这薛公子学名薛蟠'), (c(4), '丰年好大雪，珍珠如土金如铁'))
q('member_of', '袭人原来是谁房里的丫头？', (c(3), '原来这袭人亦是贾母之婢，本名珍珠'))
q('member_of', '雪雁是跟谁来的丫头', (c(3), '名唤作雪雁'))
q('member_of', '周瑞是谁的陪房？', (c(6), '是太太的陪房周瑞'))
q('member_of', '焦大是哪个府上的老仆', (c(7), '那焦大又恃贾珍不在家'))
q('member_of', '贾母娘家是哪家', (c(2), '娶的也是金陵世勋史侯家的小姐为妻'))
q('member_of', '元春进宫后封了什么', (c(16), '晋封为凤藻宫尚书，加封贤德妃'))
q('member_of', '海棠社的社长是谁？', (c(37), '我是定了`稻香老农-'), (c(37), '我一个社长自然不够'))
q('member_of', '琪官是哪个王府的人', (c(33), '那琪官现是忠顺王爷驾前承奉的人'))
q('member_of', '冷子兴是做什么行当的', (c(2), '此人是都中在古董行中贸易的号冷子兴者'))
q('member_of', '史湘云是哪家的小姐，她叔叔是谁', (c(49), '谁知保龄侯史鼐又迁委了外省大员'))
q('member_of', '北静王属于哪几家王府之列', (c(14), '原来这四王，当日惟北静王功高'))
# co_member
q('co_member', '护官符上的四大家族都有谁？', (c(4), '贾不假，白玉为堂金作马'), (c(4), '住不下金陵一个史'), (c(4), '龙王来请金陵王'), (c(4), '丰年好大雪'))
q('co_member', '海棠社里大家起了哪些别号', (c(37), '我是定了`稻香老农-'), (c(37), '因问宝钗：“蘅芜君，你可有了'), (c(37), '潇湘妃子当居第二'))
q('co_member', '宁府里除了贾珍还有哪些人', (c(2), '这位珍爷倒生了一个儿子'), (c(2), '四小姐乃宁府珍爷之胞妹'))
q('co_member', '贾府的几位小姐分别是谁生的', (c(2), '二小姐乃赦老爹之妾所出'))
q('co_member', '第四十九回一同进京投奔贾府的亲戚有哪些', (c(49), '原来邢夫人之兄嫂带了女儿岫烟进京'), (c(49), '我们薛蝌和他妹妹来了不成'))
q('co_member', '大观园里诗社一共有哪十三个人', (c(49), '李纨为首，余者迎春，探春，惜春'))
q('co_member', '王家除了王夫人还有哪些兄妹', (c(4), '寡母王氏乃现任京营节度使王子腾之妹'))
q('co_member', '宝玉房里的大丫鬟有谁', (c(5), '只留袭人，媚人，晴雯，麝月四个丫鬟为伴'))
q('co_member', '黛玉进京带了哪些人', (c(3), '一个是自幼奶娘王嬷嬷'))
q('co_member', '宁荣二公的后代和史家一样是金陵大族吗', (c(4), '宁国荣国二公之后'), (c(4), '保龄侯尚书令史公之后'))
# together
q('together', '宝玉和黛玉第一次见面', (c(3), '这个妹妹我曾见过的'))
q('together', '刘姥姥和周瑞家的在一起的段落', (c(6), '是太太的陪房周瑞'), (c(6), '你竟带了外孙子板儿，先去找陪房周瑞'))
q('together', '贾雨村与冷子兴酒肆相遇', (c(2), '此人是都中在古董行中贸易的号冷子兴者'))
q('together', '宝玉初会秦钟', (c(7), '那宝玉自见了秦钟的人品出众'), (c(7), '早有凤姐的丫鬟媳妇们见凤姐初会秦钟'))
q('together', '宝玉见北静王', (c(15), '话说宝玉举目见北静王水溶'))
q('together', '贾瑞见熙凤起淫心的段落', (c(11), '嫂子连我也不认得了'), (c(11), '因向贾瑞假意含笑道'))
q('together', '宝玉和蒋玉菡一起喝酒', (c(28), '唱小旦的蒋玉菡'), (c(28), '冯紫英蒋玉菡等都道'))
q('together', '薛蟠和柳湘莲同时出现', (c(47), '因其中有柳湘莲，薛蟠自上次会过一次'))
q('together', '宝玉跟柳湘莲谈秦钟的坟', (c(47), '宝玉便拉了柳湘莲到厅侧小书房中坐下'))
q('together', '秦可卿给凤姐托梦', (c(13), '婶婶，你是个脂粉队里的英雄'))
q('together', '甄士隐和贾雨村中秋饮酒', (c(1), '姓贾名化，表字时飞，别号雨村'))
q('together', '宝钗与黛玉、迎春姊妹一处', (c(4), '宝钗日与黛玉迎春姊妹等一处'))
q('together', '袭人送宝玉上学的那段', (c(9), '袭人早已把书笔文物包好'))
q('together', '贾珍和水溶在路祭时见面', (c(14), '水溶在轿内欠身含笑答礼'))
# connection
q('connection', '王熙凤和王夫人是什么关系？', (c(3), '二舅母王氏之内侄女'), (c(6), '就是太太的内侄女'))
q('connection', '薛姨妈与王夫人是什么关系', (c(4), '与荣国府贾政的夫人王氏，是一母所生的姊妹'))
q('connection', '冷子兴和周瑞家的有什么关系', (c(7), '原来这周瑞的女婿，便是雨村的好友冷子兴'))
q('connection', '贾雨村怎么会成了林黛玉的老师', (c(2), '因闻得鹾政欲聘一西宾'))
q('connection', '刘姥姥家和王家怎么扯上关系的', (c(6), '因贪王家的势利，便连了宗认作侄儿'))
q('connection', '秦可卿和秦钟是什么关系', (c(8), '便向养生堂抱了一个儿子并一个女儿'))
q('connection', '贾瑞和贾代儒是什么关系', (c(12), '原来贾瑞父母早亡，只有他祖父代儒教养'))
q('connection', '英莲和甄士隐有什么关系', (c(4), '他就是葫芦庙旁住的甄老爷的小姐，名唤英莲的'))
q('connection', '惜春和贾珍怎么论亲', (c(2), '四小姐乃宁府珍爷之胞妹'))
q('connection', '贾雨村断案后写信给谁', (c(4), '与贾政并京营节度使王子腾'))
q('connection', '贾琏是谁的儿子，娶了谁', (c(3), '大舅贾赦之子贾琏'), (c(2), '长名贾琏，今已二十来往了'))
q('connection', '邢岫烟和邢夫人什么关系', (c(49), '原来邢夫人之兄嫂带了女儿岫烟进京来投邢夫人的'))
q('connection', '王夫人认了谁做干女儿', (c(49), '果然王夫人已认了宝琴作干女儿'))
q('connection', '薛蟠和王子腾是什么亲戚', (c(4), '却又闻得母舅王子腾升了九省统制'))
q('connection', '林黛玉的母亲贾敏和贾府是什么关系', (c(2), '在家时名唤贾敏'))
# relation
q('relation', '贾蓉的父亲是谁？', (c(2), '这位珍爷倒生了一个儿子'))
q('relation', '李纨的丈夫是谁', (c(4), '原来这李氏即贾珠之妻'))
q('relation', '贾兰的母亲是谁', (c(4), '原来这李氏即贾珠之妻'))
q('relation', '板儿的父亲叫什么', (c(6), '狗儿亦生一子，小名板儿'))
q('relation', '秦可卿的养父是谁？', (c(8), '他父亲秦业现任营缮郎'))
q('relation', '薛蟠表字是什么', (c(4), '这薛公子学名薛蟠，表字文起'))
q('relation', '贾雨村的表字和本名', (c(1), '姓贾名化，表字时飞，别号雨村'))
q('relation', '甄士隐的岳丈是谁', (c(1), '他岳丈名唤封肃'))
q('relation', '贾赦贾政的母亲是谁家的小姐', (c(2), '娶的也是金陵世勋史侯家的小姐为妻'))
q('relation', '宝钗的哥哥是谁', (c(4), '只有薛蟠一子．还有一女'))
q('relation', '林如海做什么官', (c(2), '今钦点出为巡盐御史'))
q('relation', '贾瑞的祖父是谁', (c(12), '原来贾瑞父母早亡，只有他祖父代儒教养'))
q('relation', '忠顺王府为什么来找贾政', (c(33), '忠顺亲王府里有人来，要见老爷'), (c(33), '那琪官现是忠顺王爷驾前承奉的人'))
# crosslingual
q('crosslingual', "Who is Wang Xifeng's husband?", (c(3), '大舅贾赦之子贾琏'), lang='en')
q('crosslingual', 'Which family is Xue Baochai from?', (c(4), '只有薛蟠一子．还有一女'), lang='en')
q('crosslingual', "What post did Lin Daiyu's father hold?", (c(2), '今钦点出为巡盐御史'), lang='en')
q('crosslingual', 'Who was Jia Yucun working for as a tutor?', (c(2), '如今在这巡盐御史林家做馆了'), lang='en')

QUESTIONS = Q
